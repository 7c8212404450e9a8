// Package walrustest runs an in-process Walrus publisher and aggregator for
// tests: a real HTTP server (net/http/httptest) that implements the routes
// agentstate uses from the documented HTTP API, strictly enough to catch a
// misbehaving client, with knobs to inject the faults a real deployment
// shows.
//
// The nouns:
//
//   - The Server answers `PUT /v1/blobs` (publisher) and
//     `GET|HEAD /v1/blobs/{blobId}` and `GET|HEAD /v1/blobs/by-object-id/{id}`
//     (aggregator) on one base URL, like `walrus daemon`. Blob contents live in
//     files under the test's temporary directory, so large blobs do not weigh
//     on the test's heap.
//   - A test blob id is URL-safe base64 (no padding) of
//     sha256("walrustest blob id v1" || 0x00 || content): content-derived and of
//     the Walrus shape, but deliberately not the plain sha256, just as real
//     Walrus ids cannot be computed from a plain hash.
//   - The epoch is a counter the test sets. PUT stores a blob until
//     current+epochs (exclusive); once the current epoch reaches a blob's end
//     epoch, reads answer 404 BLOB_NOT_FOUND as Walrus does for expired blobs.
//   - A Fault makes the next matching requests fail: 503 BLOB_UNAVAILABLE,
//     504 INSUFFICIENT_CONFIRMATIONS, 429 with a plain-text body and an
//     optional Retry-After, a connection dropped before answering, a
//     connection dropped after the blob was stored, a GET body cut off
//     half-way or at a fixed byte of the blob, a request never answered
//     (Hang), a transfer held open part-way (Stall: a body short of its
//     Content-Length, or a PUT body no longer read), or a body trickled one
//     byte at a time (Trickle). WithoutRange makes reads ignore Range, as
//     some caches in front of aggregators do.
//
// Validation follows the publisher's OpenAPI description, and is stricter where
// that helps find client bugs: `epochs` must be present (the real publisher
// defaults it to 1) and within 1..53, `permanent` and `deletable` are
// booleans and not both true, `send_object_to` is a Sui address, unknown
// query parameters are refused, bodies above the size limit answer 413.
// Errors use the documented JSON shape
// `{"error":{"code","status","message","details":[{"@type":"ErrorInfo","reason","domain"}]}}`,
// except 429 and 413, which answer plain text as proxies and body limits do.
package walrustest
