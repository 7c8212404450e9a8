package httpstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentstate/agentstate/walrus"
)

// storeResult is what a publisher said about one stored blob.
type storeResult struct {
	BlobID           walrus.BlobID
	ObjectID         string // "" when not reported
	EndEpoch         int64
	Size             int64 // -1 when not reported
	AlreadyCertified bool
}

// jsonObject is a decoded JSON object whose keys are looked up without
// regard to case or underscores, so "blobId", "blob_id" and "BlobID" match.
type jsonObject map[string]any

func normKey(k string) string {
	return strings.ToLower(strings.ReplaceAll(k, "_", ""))
}

func (o jsonObject) get(key string) (any, bool) {
	if v, ok := o[key]; ok {
		return v, true
	}
	want := normKey(key)
	for k, v := range o {
		if normKey(k) == want {
			return v, true
		}
	}
	return nil, false
}

func (o jsonObject) object(key string) (jsonObject, bool) {
	v, ok := o.get(key)
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return jsonObject(m), ok
}

func (o jsonObject) str(key string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// int reads an integer given as a JSON number or a string of digits (Sui
// tooling prints 64-bit integers as strings).
func (o jsonObject) int(key string) (int64, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	var s string
	switch v := v.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

func decodeObject(b []byte) (jsonObject, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return jsonObject(m), nil
}

// decodeStoreResponse decodes a publisher's answer to PUT /v1/blobs. It
// accepts the documented camelCase names and their snake_case forms.
func decodeStoreResponse(b []byte) (storeResult, error) {
	top, err := decodeObject(b)
	if err != nil {
		return storeResult{}, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	if nc, ok := top.object("newlyCreated"); ok {
		obj, ok := nc.object("blobObject")
		if !ok {
			return storeResult{}, fmt.Errorf("%w: newlyCreated without a blobObject", ErrBadResponse)
		}
		res := storeResult{Size: -1}
		if res.BlobID, err = blobIDField(obj); err != nil {
			return storeResult{}, err
		}
		if id, ok := obj.str("id"); ok {
			if !walrus.IsSuiAddress(id) {
				return storeResult{}, fmt.Errorf("%w: blob object id %.80q is not a Sui object id", ErrBadResponse, id)
			}
			res.ObjectID = id
		}
		if size, ok := obj.int("size"); ok {
			if size < 0 {
				return storeResult{}, fmt.Errorf("%w: negative size %d", ErrBadResponse, size)
			}
			res.Size = size
		}
		storage, ok := obj.object("storage")
		if !ok {
			return storeResult{}, fmt.Errorf("%w: newlyCreated blob object without storage", ErrBadResponse)
		}
		if res.EndEpoch, err = epochField(storage, "endEpoch"); err != nil {
			return storeResult{}, err
		}
		return res, nil
	}
	if ac, ok := top.object("alreadyCertified"); ok {
		res := storeResult{Size: -1, AlreadyCertified: true}
		if res.BlobID, err = blobIDField(ac); err != nil {
			return storeResult{}, err
		}
		if res.EndEpoch, err = epochField(ac, "endEpoch"); err != nil {
			return storeResult{}, err
		}
		if id, ok := ac.str("object"); ok && walrus.IsSuiAddress(id) {
			res.ObjectID = id
		}
		return res, nil
	}
	if mi, ok := top.object("markedInvalid"); ok {
		id, _ := mi.str("blobId")
		return storeResult{}, fmt.Errorf("%w: Walrus marked blob %.80q invalid", ErrBadResponse, id)
	}
	if e, ok := top.object("error"); ok {
		msg, _ := e.str("errorMsg")
		return storeResult{}, fmt.Errorf("%w: the publisher reported an error: %.200q", ErrBadResponse, msg)
	}
	return storeResult{}, fmt.Errorf("%w: neither newlyCreated nor alreadyCertified", ErrBadResponse)
}

func blobIDField(o jsonObject) (walrus.BlobID, error) {
	s, ok := o.str("blobId")
	if !ok {
		return "", fmt.Errorf("%w: missing blobId", ErrBadResponse)
	}
	id, err := walrus.ParseBlobID(s)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	return id, nil
}

func epochField(o jsonObject, key string) (int64, error) {
	e, ok := o.int(key)
	if !ok {
		return 0, fmt.Errorf("%w: missing or non-integer %s", ErrBadResponse, key)
	}
	if e < 0 || e > 1<<32 {
		return 0, fmt.Errorf("%w: %s %d out of range", ErrBadResponse, key, e)
	}
	return e, nil
}

// maxErrorMessage bounds how much of a plain-text error body is kept.
const maxErrorMessage = 300

// decodeAPIError builds the error for a non-2xx answer from its status,
// headers and (possibly truncated) body: the documented JSON shape when the
// body has it, else the start of the body as plain text.
func decodeAPIError(op string, status int, h http.Header, body []byte) *walrus.APIError {
	e := &walrus.APIError{Op: op, HTTPStatus: status, RetryAfter: parseRetryAfter(h.Get("Retry-After"), time.Now())}
	if top, err := decodeObject(body); err == nil {
		if eo, ok := top.object("error"); ok {
			if c, ok := eo.int("code"); ok && c >= 0 && c < 1000 {
				e.Code = int(c)
			}
			e.Status, _ = eo.str("status")
			e.Status = clean(e.Status, 64)
			msg, _ := eo.str("message")
			e.Message = clean(msg, maxErrorMessage)
			if details, ok := eo.get("details"); ok {
				if list, ok := details.([]any); ok {
					for _, d := range list {
						if m, ok := d.(map[string]any); ok {
							if r, ok := jsonObject(m).str("reason"); ok && r != "" && len(e.Reasons) < 8 {
								e.Reasons = append(e.Reasons, clean(r, 64))
							}
						}
					}
				}
			}
			return e
		}
	}
	e.Message = clean(string(body), maxErrorMessage)
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// clean makes text from a server safe to print: valid UTF-8, no control
// characters, at most max bytes.
func clean(s string, max int) string {
	s = strings.TrimSpace(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError || unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t':
			r = '?'
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		}
		if b.Len()+utf8.RuneLen(r) > max {
			b.WriteString("...")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
// It returns 0 when absent or unparseable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0
		}
		if secs > 24*3600 {
			secs = 24 * 3600
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, 24*time.Hour)
		}
	}
	return 0
}
