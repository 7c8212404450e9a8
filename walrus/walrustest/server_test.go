package walrustest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/walrus/walrustest"
)

type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, srv *walrustest.Server, method, path, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// errorReason checks the documented error shape and returns the reason.
func errorReason(t *testing.T, a answer) string {
	t.Helper()
	var body struct {
		Error struct {
			Code    int
			Status  string
			Message string
			Details []struct {
				Type   string `json:"@type"`
				Reason string
				Domain string
			}
		}
	}
	if err := json.Unmarshal([]byte(a.body), &body); err != nil {
		t.Fatalf("error body %q: %v", a.body, err)
	}
	e := body.Error
	if e.Code != a.status || e.Status == "" || e.Message == "" || len(e.Details) != 1 || e.Details[0].Type != "ErrorInfo" {
		t.Fatalf("error body does not have the documented shape: %s", a.body)
	}
	return e.Details[0].Reason
}

func TestRejectsBadRequests(t *testing.T) {
	srv := walrustest.NewServer(t)
	unknown := string(walrustest.BlobID(nil))
	cases := []struct {
		method, path string
		status       int
		reason       string
	}{
		{"PUT", "/v1/blobs", 400, "INVALID_ARGUMENT"},
		{"PUT", "/v1/blobs?epochs=0", 400, "INVALID_ARGUMENT"},
		{"PUT", "/v1/blobs?epochs=54", 400, "INVALID_ARGUMENT"},
		{"PUT", "/v1/blobs?epochs=x", 400, "INVALID_ARGUMENT"},
		{"PUT", "/v1/blobs?epochs=1&permanent=true&deletable=true", 400, "INVALID_ARGUMENT"},
		{"PUT", "/v1/blobs?epochs=1&permanent=yes", 400, "INVALID_ARGUMENT"},
		{"PUT", "/v1/blobs?epochs=1&send-object-to=0x1", 400, "INVALID_ARGUMENT"},
		{"PUT", "/v1/blobs?epochs=1&send_object_to=bob", 400, "INVALID_ARGUMENT"},
		{"PUT", "/v1/blobs?epochs=1&send_object_to=0x1&share=true", 400, "INVALID_ARGUMENT"},
		{"PUT", "/v1/blobs?epochs=1&encoding_type=RS3", 400, "INVALID_ARGUMENT"},
		{"PUT", "/v1/blobs?epochs=1&epochs=2", 400, "INVALID_ARGUMENT"},
		{"POST", "/v1/blobs?epochs=1", 405, "METHOD_NOT_ALLOWED"},
		{"GET", "/v1/blobs", 405, "METHOD_NOT_ALLOWED"},
		{"GET", "/v1/blobs/not-an-id", 400, "INVALID_ARGUMENT"},
		{"GET", "/v1/blobs/" + unknown, 404, "BLOB_NOT_FOUND"},
		{"GET", "/v1/blobs/by-object-id/0x" + strings.Repeat("1", 64), 404, "BLOB_NOT_FOUND"},
		{"GET", "/v1/blobs/by-object-id/xyz", 400, "INVALID_ARGUMENT"},
		{"DELETE", "/v1/blobs/" + unknown, 405, "METHOD_NOT_ALLOWED"},
		{"GET", "/v2/blobs", 404, "ROUTE_NOT_FOUND"},
	}
	for _, tc := range cases {
		a := do(t, srv, tc.method, tc.path, "abc")
		if a.status != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, a.status, a.body, tc.status)
			continue
		}
		if r := errorReason(t, a); r != tc.reason {
			t.Errorf("%s %s: reason %s, want %s", tc.method, tc.path, r, tc.reason)
		}
	}
	if srv.NumBlobs() != 0 {
		t.Fatal("a rejected request stored a blob")
	}
	ok := []string{"/v1/blobs?epochs=1", "/v1/blobs?epochs=53&permanent=true", "/v1/blobs?epochs=2&deletable=true&send_object_to=0xAB", "/v1/blobs?epochs=1&share=true&force=true&encoding_type=RS2"}
	for _, p := range ok {
		if a := do(t, srv, "PUT", p, "x"); a.status != 200 {
			t.Errorf("PUT %s: %d %s", p, a.status, a.body)
		}
	}
}

func TestStoreAnswers(t *testing.T) {
	srv := walrustest.NewServer(t, walrustest.WithEpoch(10))
	a := do(t, srv, "PUT", "/v1/blobs?epochs=3&permanent=true", "hello")
	var nc struct {
		NewlyCreated struct {
			BlobObject struct {
				ID, BlobID            string
				Size, RegisteredEpoch int64
				CertifiedEpoch        int64
				Deletable             bool
				Storage               struct{ StartEpoch, EndEpoch int64 }
			}
			Cost int64
		}
	}
	if err := json.Unmarshal([]byte(a.body), &nc); err != nil || a.status != 200 {
		t.Fatalf("%d %s: %v", a.status, a.body, err)
	}
	o := nc.NewlyCreated.BlobObject
	if o.BlobID != string(walrustest.BlobID([]byte("hello"))) || o.Size != 5 || o.Deletable || o.Storage.StartEpoch != 10 || o.Storage.EndEpoch != 13 || o.CertifiedEpoch != 10 || !strings.HasPrefix(o.ID, "0x") {
		t.Fatalf("newlyCreated %+v", o)
	}
	if content, end, ok := srv.Blob(walrustest.BlobID([]byte("hello"))); !ok || string(content) != "hello" || end != 13 {
		t.Fatalf("Blob: %q %d %v", content, end, ok)
	}
	a = do(t, srv, "PUT", "/v1/blobs?epochs=1", "hello")
	if !strings.Contains(a.body, `"alreadyCertified"`) || !strings.Contains(a.body, `"event"`) || !strings.Contains(a.body, `"endEpoch":13`) {
		t.Fatalf("re-store of a permanent blob: %s", a.body)
	}
	do(t, srv, "PUT", "/v1/blobs?epochs=2", "deletable")
	a = do(t, srv, "PUT", "/v1/blobs?epochs=2", "deletable")
	if !strings.Contains(a.body, `"alreadyCertified"`) || !strings.Contains(a.body, `"object":"0x`) {
		t.Fatalf("re-store of a deletable blob: %s", a.body)
	}
	a = do(t, srv, "PUT", "/v1/blobs?epochs=2&force=true", "deletable")
	if !strings.Contains(a.body, `"newlyCreated"`) {
		t.Fatalf("forced re-store: %s", a.body)
	}
	// Reads by object id.
	a = do(t, srv, "GET", "/v1/blobs/by-object-id/"+o.ID, "")
	if a.status != 200 || a.body != "hello" {
		t.Fatalf("by object id: %d %q", a.status, a.body)
	}
	// Expiry.
	srv.SetEpoch(13)
	a = do(t, srv, "GET", "/v1/blobs/"+o.BlobID, "")
	if a.status != 404 || errorReason(t, a) != "BLOB_NOT_FOUND" {
		t.Fatalf("expired blob: %d %s", a.status, a.body)
	}
}

func TestSnakeCase(t *testing.T) {
	srv := walrustest.NewServer(t, walrustest.WithSnakeCase())
	a := do(t, srv, "PUT", "/v1/blobs?epochs=1", "x")
	for _, k := range []string{`"newly_created"`, `"blob_object"`, `"blob_id"`, `"end_epoch"`, `"registered_epoch"`} {
		if !strings.Contains(a.body, k) {
			t.Errorf("snake_case answer lacks %s: %s", k, a.body)
		}
	}
	if strings.Contains(a.body, "blobId") {
		t.Errorf("camelCase left in %s", a.body)
	}
}

func TestSizeLimit(t *testing.T) {
	srv := walrustest.NewServer(t, walrustest.WithMaxBlobSize(10))
	if a := do(t, srv, "PUT", "/v1/blobs?epochs=1", "0123456789"); a.status != 200 {
		t.Fatalf("at the limit: %d", a.status)
	}
	if a := do(t, srv, "PUT", "/v1/blobs?epochs=1", "0123456789A"); a.status != 413 {
		t.Fatalf("over the limit: %d", a.status)
	}
	// Without a Content-Length the limit applies while reading.
	req, _ := http.NewRequest("PUT", srv.URL+"/v1/blobs?epochs=1", io.MultiReader(strings.NewReader("012345"), strings.NewReader("6789AB")))
	req.ContentLength = -1
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked over the limit: %d", resp.StatusCode)
	}
	if srv.NumBlobs() != 1 {
		t.Fatalf("%d blobs stored", srv.NumBlobs())
	}
}

func TestRange(t *testing.T) {
	srv := walrustest.NewServer(t)
	do(t, srv, "PUT", "/v1/blobs?epochs=1", "0123456789")
	path := "/v1/blobs/" + string(walrustest.BlobID([]byte("0123456789")))
	for rng, want := range map[string]string{"bytes=2-4": "234", "bytes=7-": "789", "bytes=-3": "789", "bytes=5-100": "56789", "bytes=0-0,5-6": "0123456789", "items=1-2": "0123456789"} {
		a := do(t, srv, "GET", path, "", "Range", rng)
		if a.body != want {
			t.Errorf("Range %s: %d %q, want %q", rng, a.status, a.body, want)
		}
		if partial := a.status == 206; partial != (want != "0123456789") {
			t.Errorf("Range %s: status %d", rng, a.status)
		}
	}
	a := do(t, srv, "GET", path, "", "Range", "bytes=2-4")
	if a.header.Get("Content-Range") != "bytes 2-4/10" {
		t.Errorf("Content-Range %q", a.header.Get("Content-Range"))
	}
	if a := do(t, srv, "GET", path, "", "Range", "bytes=10-"); a.status != 416 || a.header.Get("Content-Range") != "bytes */10" {
		t.Errorf("unsatisfiable range: %d %v", a.status, a.header)
	}
	if a := do(t, srv, "HEAD", path, ""); a.status != 200 || a.body != "" || a.header.Get("Content-Length") != "10" {
		t.Errorf("HEAD: %d %q %v", a.status, a.body, a.header)
	}
}

func TestFaults(t *testing.T) {
	srv := walrustest.NewServer(t)
	do(t, srv, "PUT", "/v1/blobs?epochs=1", "0123456789")
	path := "/v1/blobs/" + string(walrustest.BlobID([]byte("0123456789")))

	srv.Inject(walrustest.Fault{Kind: walrustest.Unavailable, RetryAfter: 1500 * time.Millisecond})
	a := do(t, srv, "GET", path, "")
	if a.status != 503 || errorReason(t, a) != "BLOB_UNAVAILABLE" || a.header.Get("Retry-After") != "2" {
		t.Fatalf("503 fault: %d %v %s", a.status, a.header, a.body)
	}
	srv.Inject(walrustest.Fault{Kind: walrustest.Timeout, Method: "PUT"})
	if a := do(t, srv, "GET", path, ""); a.status != 200 {
		t.Fatalf("a PUT fault fired on GET: %d", a.status)
	}
	a = do(t, srv, "PUT", "/v1/blobs?epochs=1", "x")
	if a.status != 504 || errorReason(t, a) != "INSUFFICIENT_CONFIRMATIONS" {
		t.Fatalf("504 fault: %d %s", a.status, a.body)
	}
	srv.Inject(walrustest.Fault{Kind: walrustest.TooManyRequests, Count: 2})
	for range 2 {
		a = do(t, srv, "GET", path, "")
		if a.status != 429 || strings.HasPrefix(a.body, "{") || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
			t.Fatalf("429 fault: %d %q", a.status, a.body)
		}
	}
	if srv.PendingFaults() != 0 {
		t.Fatal("faults left over")
	}

	// A fresh connection each time: Go's transport silently retries a GET
	// whose reused connection drops.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	srv.Inject(walrustest.Fault{Kind: walrustest.Drop})
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	if resp, err := fresh.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("dropped connection answered")
	}

	srv.Inject(walrustest.Fault{Kind: walrustest.Truncate})
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != io.ErrUnexpectedEOF || string(b) != "01234" || resp.ContentLength != 10 {
		t.Fatalf("truncated body: %q %v (Content-Length %d)", b, err, resp.ContentLength)
	}

	srv.Inject(walrustest.Fault{Kind: walrustest.DropAfterStore})
	req, _ = http.NewRequest("PUT", srv.URL+"/v1/blobs?epochs=1", strings.NewReader("kept"))
	if resp, err := fresh.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("drop-after-store answered")
	}
	if _, _, ok := srv.Blob(walrustest.BlobID([]byte("kept"))); !ok {
		t.Fatal("drop-after-store did not store")
	}
	var faulted int
	for _, r := range srv.Requests() {
		if r.Fault != 0 {
			faulted++
		}
	}
	if faulted != 7 {
		t.Fatalf("%d faulted requests recorded, want 7", faulted)
	}
}

func TestStallFaults(t *testing.T) {
	srv := walrustest.NewServer(t)
	do(t, srv, "PUT", "/v1/blobs?epochs=1", "0123456789")
	path := "/v1/blobs/" + string(walrustest.BlobID([]byte("0123456789")))
	get := func(timeout time.Duration, header ...string) (*http.Response, []byte, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}

	// Hang: no answer at all.
	srv.Inject(walrustest.Fault{Kind: walrustest.Hang, Method: "GET"})
	if _, _, err := get(100 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang: %v", err)
	}
	// Stall: headers and the body up to byte At, then nothing, whatever the Range.
	srv.Inject(walrustest.Fault{Kind: walrustest.Stall, At: 6, Count: 2})
	resp, b, err := get(100*time.Millisecond, "Range", "bytes=2-")
	if !errors.Is(err, context.DeadlineExceeded) || string(b) != "2345" || resp.ContentLength != 8 {
		t.Fatalf("stall: %q %v", b, err)
	}
	resp, b, err = get(100 * time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || string(b) != "012345" || resp.ContentLength != 10 {
		t.Fatalf("stall: %q %v", b, err)
	}
	// Truncate at a fixed byte.
	srv.Inject(walrustest.Fault{Kind: walrustest.Truncate, At: 3})
	if _, b, err := get(time.Second, "Range", "bytes=1-"); err != io.ErrUnexpectedEOF || string(b) != "12" {
		t.Fatalf("truncate at 3: %q %v", b, err)
	}
	// Trickle: every byte, one at a time.
	srv.Inject(walrustest.Fault{Kind: walrustest.Trickle, Every: time.Millisecond})
	if _, b, err := get(5 * time.Second); err != nil || string(b) != "0123456789" {
		t.Fatalf("trickle: %q %v", b, err)
	}
	srv.Inject(walrustest.Fault{Kind: walrustest.Trickle, Every: time.Hour})
	if _, b, err := get(100 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) || len(b) != 0 {
		t.Fatalf("slow trickle: %q %v", b, err)
	}
	// Range support off.
	srv.SetRange(false)
	if resp, b, err := get(time.Second, "Range", "bytes=4-"); err != nil || resp.StatusCode != 200 || string(b) != "0123456789" {
		t.Fatalf("range off: %v %q %v", resp, b, err)
	}
	srv.SetRange(true)

	// PUT: Hang reads the body and never answers; Stall stops reading.
	put := func(body string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "PUT", srv.URL+"/v1/blobs?epochs=1", strings.NewReader(body))
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, k := range []walrustest.FaultKind{walrustest.Hang, walrustest.Stall} {
		srv.Inject(walrustest.Fault{Kind: k, Method: "PUT"})
		if err := put("held"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("PUT %v: %v", k, err)
		}
	}
	if _, _, ok := srv.Blob(walrustest.BlobID([]byte("held"))); ok {
		t.Fatal("a held PUT stored the blob")
	}
	srv.Inject(walrustest.Fault{Kind: walrustest.Trickle, Method: "PUT", Every: time.Millisecond})
	if a := do(t, srv, "PUT", "/v1/blobs?epochs=1", "trickled"); a.status != 200 || !strings.Contains(a.body, "newlyCreated") {
		t.Fatalf("trickled answer: %d %q", a.status, a.body)
	}
}
