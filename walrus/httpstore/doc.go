// Package httpstore is the walrus.Store that talks to a real Walrus
// deployment over its HTTP API: a publisher to store blobs
// (`PUT /v1/blobs?epochs=N[&permanent=true][&send_object_to=ADDR]`, body the
// raw bytes) and an aggregator to read them (`GET /v1/blobs/{blobId}`,
// `GET /v1/blobs/by-object-id/{objectId}`).
//
// The nouns:
//
//   - The Client holds the two base URLs, an HTTP client and the retry,
//     part-size and spooling policy. Either URL may be empty for a read-only
//     or write-only client.
//   - A store result is the publisher's JSON answer, either `newlyCreated`
//     (with the new Blob object, its id and its storage end epoch) or
//     `alreadyCertified` (blob id, end epoch, and the certifying event or the
//     owned object). Both are decoded whether the field names come in
//     camelCase, as the service sends them, or snake_case, as some generated
//     documentation shows.
//   - A part is a slice of a blob larger than the part size (10 MiB less
//     headroom by default, since public publishers cap a request at 10 MiB),
//     stored as a blob of its own.
//   - A manifest is a small binary blob listing a split blob's parts (see
//     Manifest for the exact encoding). Its id is the id Put returns; Get
//     recognises it by ManifestMagic and streams the parts in order,
//     checking every part's size and the sha256 of the whole. Put also stores
//     content that happens to begin with ManifestMagic under a one-part
//     manifest, so every blob this package writes reads back as written:
//     the top-level blob is a manifest exactly when it begins with the magic,
//     and parts are never interpreted.
//
// Failures: 429, 502, 503 and 504 answers, refused or dropped connections and
// truncated responses are retried with exponential backoff and jitter
// (honouring Retry-After up to the maximum backoff), waiting in a way that
// ends as soon as the context is done; when the attempts run out the error is
// a *walrus.RetryError matching walrus.ErrUnavailable. Other answers are not
// retried: 404 is walrus.ErrNotFound (never stored or expired), 413 is
// walrus.ErrTooLarge, and every error answer is a *walrus.APIError carrying
// the decoded JSON error body or the plain-text one. A GET body that ends
// early or stalls is resumed with a Range request from the first missing
// byte; the attempts count those that made no progress, and a read that
// fails is a *ReadError naming the blob and the offset.
//
// Nothing waits for ever: Timeouts bounds the wait for an answer, a body
// that stops moving (Idle) and one that trickles (a floor of MinBytes per
// RateWindow); a stall is a *StallError (ErrStalled). Answers are read up
// to a cap.
//
// Walrus blob ids depend on the erasure encoding, so the content of a single
// blob cannot be checked against its id here; agentstate's snapshot envelope
// is authenticated encryption, which catches any change. Split blobs are
// checked against the sha256 in their manifest.
package httpstore
