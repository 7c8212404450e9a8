package httpstore

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentstate/agentstate/walrus"
)

const (
	id1  = "M4hsZGQ1oCktdzegB6HnI6Mi28S2nqOPHxK-W7_4BUk"
	obj1 = "0xe91eee8c5b6f35b9a250cfc29e30f0d9e5463a21fd8d1ddb0fc22d44db4eac50"
)

// The newlyCreated answer as printed in the Walrus documentation.
const docNewlyCreated = `{
  "newlyCreated": {
    "blobObject": {
      "id": "0xe91eee8c5b6f35b9a250cfc29e30f0d9e5463a21fd8d1ddb0fc22d44db4eac50",
      "registeredEpoch": 34,
      "blobId": "M4hsZGQ1oCktdzegB6HnI6Mi28S2nqOPHxK-W7_4BUk",
      "size": 17,
      "encodingType": "RS2",
      "certifiedEpoch": 34,
      "storage": {
        "id": "0x4748cd83217b5ce7aa77e7f1ad6fc5f7f694e26a157381b9391ac65c47815faf",
        "startEpoch": 34,
        "endEpoch": 35,
        "storageSize": 66034000
      },
      "deletable": false
    },
    "resourceOperation": {"registerFromScratch": {"encodedLength": 66034000, "epochsAhead": 1}},
    "cost": 132300
  }
}`

const docAlreadyCertified = `{
  "alreadyCertified": {
    "blobId": "M4hsZGQ1oCktdzegB6HnI6Mi28S2nqOPHxK-W7_4BUk",
    "event": {"txDigest": "4XQHFa9S324wTzYHF3vsBSwpUZuLpmwTHYMFv9nsttSs", "eventSeq": "0"},
    "endEpoch": 35
  }
}`

func TestDecodeStoreResponse(t *testing.T) {
	cases := []struct {
		name string
		body string
		want storeResult
	}{
		{"documented newlyCreated", docNewlyCreated, storeResult{BlobID: id1, ObjectID: obj1, EndEpoch: 35, Size: 17}},
		{"documented alreadyCertified", docAlreadyCertified, storeResult{BlobID: id1, EndEpoch: 35, Size: -1, AlreadyCertified: true}},
		{"snake_case newly_created", `{"newly_created":{"blob_object":{"id":"` + obj1 + `","blob_id":"` + id1 + `","size":17,"registered_epoch":3,"certified_epoch":3,"storage":{"start_epoch":3,"end_epoch":8,"storage_size":1},"deletable":true},"resource_operation":{"register_from_scratch":{"encoded_length":1,"epochs_ahead":5}},"cost":1}}`,
			storeResult{BlobID: id1, ObjectID: obj1, EndEpoch: 8, Size: 17}},
		{"snake_case already_certified with object", `{"already_certified":{"blob_id":"` + id1 + `","end_epoch":9,"object":"` + obj1 + `"}}`,
			storeResult{BlobID: id1, ObjectID: obj1, EndEpoch: 9, Size: -1, AlreadyCertified: true}},
		{"numbers as strings", `{"alreadyCertified":{"blobId":"` + id1 + `","endEpoch":"12","event":{"txDigest":"x","eventSeq":"0"}}}`,
			storeResult{BlobID: id1, EndEpoch: 12, Size: -1, AlreadyCertified: true}},
		{"uncertified newlyCreated (certifiedEpoch null)", `{"newlyCreated":{"blobObject":{"id":"` + obj1 + `","blobId":"` + id1 + `","size":0,"certifiedEpoch":null,"storage":{"endEpoch":2}}}}`,
			storeResult{BlobID: id1, ObjectID: obj1, EndEpoch: 2, Size: 0}},
	}
	for _, tc := range cases {
		got, err := decodeStoreResponse([]byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDecodeStoreResponseRejects(t *testing.T) {
	bad := map[string]string{
		"empty":             ``,
		"not json":          `<html>502 Bad Gateway</html>`,
		"array":             `[]`,
		"neither":           `{"stored":{}}`,
		"trailing":          docAlreadyCertified + `{}`,
		"no blobObject":     `{"newlyCreated":{"cost":1}}`,
		"no storage":        `{"newlyCreated":{"blobObject":{"blobId":"` + id1 + `","size":1}}}`,
		"no endEpoch":       `{"alreadyCertified":{"blobId":"` + id1 + `"}}`,
		"bad blob id":       `{"alreadyCertified":{"blobId":"abc","endEpoch":3}}`,
		"padded blob id":    `{"alreadyCertified":{"blobId":"` + id1 + `=","endEpoch":3}}`,
		"negative epoch":    `{"alreadyCertified":{"blobId":"` + id1 + `","endEpoch":-3}}`,
		"fractional epoch":  `{"alreadyCertified":{"blobId":"` + id1 + `","endEpoch":3.5}}`,
		"bad object id":     `{"newlyCreated":{"blobObject":{"id":"zzz","blobId":"` + id1 + `","size":1,"storage":{"endEpoch":2}}}}`,
		"negative size":     `{"newlyCreated":{"blobObject":{"blobId":"` + id1 + `","size":-1,"storage":{"endEpoch":2}}}}`,
		"marked invalid":    `{"markedInvalid":{"blobId":"` + id1 + `","event":{"txDigest":"x","eventSeq":"0"}}}`,
		"error result":      `{"error":{"blob_id":null,"error_msg":"out of gas"}}`,
		"blobObject string": `{"newlyCreated":{"blobObject":"x"}}`,
	}
	for name, body := range bad {
		if _, err := decodeStoreResponse([]byte(body)); !errors.Is(err, ErrBadResponse) {
			t.Errorf("%s: got %v, want ErrBadResponse", name, err)
		}
	}
}

func TestDecodeAPIError(t *testing.T) {
	h := http.Header{}
	e := decodeAPIError("read", 404, h, []byte(`{"error":{"code":404,"status":"NOT_FOUND","message":"blob not found","details":[{"@type":"ErrorInfo","reason":"BLOB_NOT_FOUND","domain":"daemon"}]}}`))
	if e.Code != 404 || e.Status != "NOT_FOUND" || e.Message != "blob not found" || !e.HasReason("BLOB_NOT_FOUND") || !errors.Is(e, walrus.ErrNotFound) {
		t.Fatalf("JSON 404: %+v", e)
	}
	h.Set("Retry-After", "7")
	e = decodeAPIError("store", 429, h, []byte("Too Many Requests! Wait for 7s\n"))
	if e.Message != "Too Many Requests! Wait for 7s" || e.RetryAfter != 7*time.Second || !errors.Is(e, walrus.ErrUnavailable) {
		t.Fatalf("plain 429: %+v", e)
	}
	e = decodeAPIError("store", 413, http.Header{}, nil)
	if e.Message != "Request Entity Too Large" || !errors.Is(e, walrus.ErrTooLarge) {
		t.Fatalf("empty 413: %+v", e)
	}
	e = decodeAPIError("read", 502, http.Header{}, []byte("\x1b[31mbad\x00gateway\xff"))
	if e.Message != "?[31mbad?gateway?" {
		t.Fatalf("control characters not cleaned: %q", e.Message)
	}
	e = decodeAPIError("read", 500, http.Header{}, []byte(`{"error":{"code":"x","status":5,"details":"no"}}`))
	if e.Code != 0 || e.Status != "" || len(e.Reasons) != 0 {
		t.Fatalf("mistyped fields: %+v", e)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		" 10 ":                          10 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"999999999":                     24 * time.Hour,
		"Sat, 01 Mar 2025 12:00:30 GMT": 30 * time.Second,
		"Sat, 01 Mar 2025 11:00:00 GMT": 0,
	}
	for v, want := range cases {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	type r struct {
		start, total int64
		ok           bool
	}
	cases := map[string]r{
		"bytes 0-9/10":   {0, 10, true},
		"bytes 5-9/*":    {5, -1, true},
		"bytes 5-9/9":    {0, 0, false},
		"bytes 9-5/10":   {0, 0, false},
		"bytes */10":     {0, 0, false},
		"items 0-1/2":    {0, 0, false},
		"bytes -1-2/10":  {0, 0, false},
		"bytes 1-2/zero": {0, 0, false},
	}
	for v, want := range cases {
		s, tot, ok := parseContentRange(v)
		if (r{s, tot, ok}) != want {
			t.Errorf("parseContentRange(%q) = %d %d %v, want %+v", v, s, tot, ok, want)
		}
	}
}

func FuzzDecodeStoreResponse(f *testing.F) {
	f.Add([]byte(docNewlyCreated))
	f.Add([]byte(docAlreadyCertified))
	f.Add([]byte(`{"already_certified":{"blob_id":"` + id1 + `","end_epoch":9,"object":"` + obj1 + `"}}`))
	f.Add([]byte(`{"markedInvalid":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := decodeStoreResponse(b)
		if err != nil {
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("error %v is not ErrBadResponse", err)
			}
			return
		}
		if _, err := walrus.ParseBlobID(string(res.BlobID)); err != nil {
			t.Fatalf("accepted a bad blob id: %v", err)
		}
		if res.EndEpoch < 0 || res.Size < -1 || (res.ObjectID != "" && !walrus.IsSuiAddress(res.ObjectID)) {
			t.Fatalf("accepted out-of-range fields: %+v", res)
		}
	})
}

func FuzzDecodeAPIError(f *testing.F) {
	f.Add(404, []byte(`{"error":{"code":404,"status":"NOT_FOUND","message":"m","details":[{"reason":"BLOB_NOT_FOUND"}]}}`))
	f.Add(429, []byte("Too Many Requests"))
	f.Add(503, []byte(`{"error":{"code":503,"status":"UNAVAILABLE","details":[{"reason":"BLOB_UNAVAILABLE"},{"reason":"X"}]}}`))
	f.Fuzz(func(t *testing.T, status int, b []byte) {
		e := decodeAPIError("read", status, http.Header{}, b)
		if e.HTTPStatus != status || len(e.Message) > maxErrorMessage+3 || len(e.Reasons) > 8 {
			t.Fatalf("bad error %+v", e)
		}
		_ = e.Error()
	})
}
