package walrus

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A blob id printed in the Walrus documentation.
const docBlobID = "M4hsZGQ1oCktdzegB6HnI6Mi28S2nqOPHxK-W7_4BUk"

func TestParseBlobID(t *testing.T) {
	good := []string{
		docBlobID,
		"E7_nNXvFU_3qZVu3OH1yycRG7LZlyn1-UxEDCDDqGGU",
		strings.Repeat("A", 43),
		strings.Repeat("_", 42) + "w",
	}
	for _, s := range good {
		id, err := ParseBlobID(s)
		if err != nil {
			t.Errorf("ParseBlobID(%q): %v", s, err)
			continue
		}
		if id.String() != s {
			t.Errorf("ParseBlobID(%q) = %q", s, id)
		}
		b, err := id.Bytes()
		if err != nil {
			t.Fatalf("Bytes(%q): %v", s, err)
		}
		if back := BlobIDFromBytes(b); back != id {
			t.Errorf("round trip %q -> %x -> %q", s, b, back)
		}
	}
	bad := map[string]string{
		"empty":                 "",
		"short":                 docBlobID[:42],
		"long":                  docBlobID + "A",
		"padded":                docBlobID + "=",
		"std alphabet plus":     "+" + docBlobID[1:],
		"std alphabet slash":    "/" + docBlobID[1:],
		"space":                 " " + docBlobID[1:],
		"non-canonical last":    strings.Repeat("A", 42) + "B", // low bits set
		"non-ascii":             "é" + docBlobID[2:],
		"hex object id":         "0x56ae1c86e17db174ea002f8340e28880bc8a8587c56e8604a4fa6b1170b23a60",
		"nul":                   "\x00" + docBlobID[1:],
		"newline in the middle": docBlobID[:20] + "\n" + docBlobID[21:],
	}
	for name, s := range bad {
		_, err := ParseBlobID(s)
		if !errors.Is(err, ErrBadBlobID) {
			t.Errorf("%s: ParseBlobID(%q) = %v, want ErrBadBlobID", name, s, err)
		}
		if _, err := BlobID(s).Bytes(); !errors.Is(err, ErrBadBlobID) {
			t.Errorf("%s: BlobID(%q).Bytes() = %v, want ErrBadBlobID", name, s, err)
		}
	}
}

func TestBlobIDKnownAnswer(t *testing.T) {
	// sha256("") printed as a blob id: pins the alphabet and the lack of padding.
	id := BlobIDFromBytes(sha256.Sum256(nil))
	if want := "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"; string(id) != want {
		t.Fatalf("BlobIDFromBytes(sha256(\"\")) = %s, want %s", id, want)
	}
	if id.Short() != "47DEQpj8HB" || id.IsZero() || !BlobID("").IsZero() {
		t.Fatalf("Short/IsZero wrong for %s", id)
	}
}

func TestStoreOptionsValidate(t *testing.T) {
	ok := []StoreOptions{{}, {Epochs: 1}, {Epochs: MaxEpochsAhead, Permanent: true}, {SendObjectTo: "0x1"}, {SendObjectTo: "0x" + strings.Repeat("aB", 32)}}
	for _, o := range ok {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	bad := []StoreOptions{{Epochs: -1}, {Epochs: MaxEpochsAhead + 1}, {SendObjectTo: "0x"}, {SendObjectTo: "1234"}, {SendObjectTo: "0x" + strings.Repeat("a", 65)}, {SendObjectTo: "0xg1"}}
	for _, o := range bad {
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: got %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestAPIErrorIs(t *testing.T) {
	cases := []struct {
		e                               *APIError
		notFound, tooLarge, unavailable bool
	}{
		{&APIError{Op: "read", HTTPStatus: 404, Reasons: []string{"BLOB_NOT_FOUND"}}, true, false, false},
		{&APIError{Op: "store", HTTPStatus: 404}, false, false, false},
		{&APIError{Op: "store", HTTPStatus: 413}, false, true, false},
		{&APIError{Op: "store", HTTPStatus: 503}, false, false, true},
		{&APIError{Op: "read", HTTPStatus: 504}, false, false, true},
		{&APIError{Op: "read", HTTPStatus: 429}, false, false, true},
		{&APIError{Op: "read", HTTPStatus: 500}, false, false, false},
		{&APIError{Op: "read", HTTPStatus: 400}, false, false, false},
	}
	for _, c := range cases {
		wrapped := fmt.Errorf("outer: %w", c.e)
		if got := errors.Is(wrapped, ErrNotFound); got != c.notFound {
			t.Errorf("%v: Is(ErrNotFound) = %v", c.e, got)
		}
		if got := errors.Is(wrapped, ErrTooLarge); got != c.tooLarge {
			t.Errorf("%v: Is(ErrTooLarge) = %v", c.e, got)
		}
		if got := errors.Is(wrapped, ErrUnavailable); got != c.unavailable {
			t.Errorf("%v: Is(ErrUnavailable) = %v", c.e, got)
		}
		var ae *APIError
		if !errors.As(wrapped, &ae) || ae != c.e {
			t.Errorf("%v: errors.As failed", c.e)
		}
	}
	e := &APIError{Op: "read", HTTPStatus: 404, Status: "NOT_FOUND", Message: "gone", Reasons: []string{"BLOB_NOT_FOUND"}}
	if got, want := e.Error(), "walrus: read: HTTP 404 NOT_FOUND (BLOB_NOT_FOUND): gone"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !e.HasReason("BLOB_NOT_FOUND") || e.HasReason("X") {
		t.Error("HasReason wrong")
	}
}

func TestRetryAndCorruptErrors(t *testing.T) {
	last := &APIError{Op: "store", HTTPStatus: 500}
	re := &RetryError{Op: "store", Attempts: 3, Err: last}
	if !errors.Is(re, ErrUnavailable) {
		t.Error("RetryError is not ErrUnavailable")
	}
	var ae *APIError
	if !errors.As(re, &ae) || ae != last {
		t.Error("RetryError does not unwrap to its last error")
	}
	ce := &CorruptError{ID: docBlobID, What: "sha256", Want: "aa", Got: "bb"}
	if !errors.Is(fmt.Errorf("x: %w", ce), ErrCorrupt) || errors.Is(ce, ErrNotFound) {
		t.Error("CorruptError Is wrong")
	}
	if !strings.Contains(ce.Error(), docBlobID) {
		t.Errorf("CorruptError does not name the blob: %v", ce)
	}
}

func FuzzParseBlobID(f *testing.F) {
	f.Add(docBlobID)
	f.Add("E7_nNXvFU_3qZVu3OH1yycRG7LZlyn1-UxEDCDDqGGU")
	f.Add(strings.Repeat("A", 42) + "B")
	f.Add(docBlobID + "=")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseBlobID(s)
		if err != nil {
			if !errors.Is(err, ErrBadBlobID) {
				t.Fatalf("error %v does not match ErrBadBlobID", err)
			}
			return
		}
		b, err := id.Bytes()
		if err != nil {
			t.Fatalf("parsed id %q has no bytes: %v", s, err)
		}
		if BlobIDFromBytes(b) != id || string(id) != s {
			t.Fatalf("id %q is not canonical", s)
		}
	})
}
