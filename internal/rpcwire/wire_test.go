package rpcwire

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// The vectors of docs/service.md §3: each message's exact bytes, both ways.
var vectors = []struct {
	msg  any
	hex  string
	into func() any
}{
	{&Req{Agent: "main"}, "a101646d61696e", func() any { return &Req{} }},
	{&Resp{Data: []byte(`{"x":1}`), OK: true}, "a201477b2278223a317d02f5", func() any { return &Resp{} }},
	{&ExecStart{Args: []string{"agentstate", "log"}, Dir: "/w"}, "a201826a6167656e747374617465636c6f6702622f77", func() any { return &ExecStart{} }},
	{&ExecOut{Done: true, Code: 2}, "a204f50502", func() any { return &ExecOut{} }},
	{&ExecOut{Pager: "less"}, "a106646c657373", func() any { return &ExecOut{} }},
	{&Req{Blocks: []Block{{CID: []byte{1, 0x55, 0x12, 0}, Data: []byte("hi")}}}, "a10481a201440155120002426869", func() any { return &Req{} }},
}

func TestVectors(t *testing.T) {
	for _, v := range vectors {
		b, err := Encoding.Marshal(v.msg)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != v.hex {
			t.Errorf("%T: encodes as %s, want %s", v.msg, got, v.hex)
		}
		raw, _ := hex.DecodeString(v.hex)
		out := v.into()
		if err := Encoding.Unmarshal(raw, out); err != nil {
			t.Fatalf("%T: %v", v.msg, err)
		}
		if !reflect.DeepEqual(out, v.msg) {
			t.Errorf("%T: decodes as %+v, want %+v", v.msg, out, v.msg)
		}
	}
}

// What a well-formed message never holds is refused before it is built.
func TestDecodeRefuses(t *testing.T) {
	for name, h := range map[string]string{
		"unknown field":       "a1181e01",
		"duplicate key":       "a201616101616201",
		"indefinite length":   "a1015f6161ff",
		"tag":                 "a101c16161",
		"wrong type":          "a10101",
		"truncated":           "a10164",
		"deep nesting":        strings.Repeat("81", 20) + "00",
		"trailing bytes":      "a101646d61696e00",
		"huge declared array": "a1039b00000000ffffffff",
	} {
		raw, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(name, err)
		}
		var q Req
		err = Encoding.Unmarshal(raw, &q)
		if err == nil || !IsMalformed(err) {
			t.Errorf("%s: %x decoded (%v), want a malformed-message error", name, raw, err)
		}
	}
}

// FuzzUnmarshal: any bytes either decode into a request that re-encodes and
// decodes to the same request, or are refused as malformed; nothing panics.
func FuzzUnmarshal(f *testing.F) {
	for _, v := range vectors {
		raw, _ := hex.DecodeString(v.hex)
		f.Add(raw)
	}
	f.Add([]byte{0xa1, 0x18, 0x1e, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, into := range []func() any{func() any { return &Req{} }, func() any { return &ExecStart{} }, func() any { return &ExecIn{} }} {
			m := into()
			if err := Encoding.Unmarshal(b, m); err != nil {
				if !IsMalformed(err) {
					t.Fatalf("error is not a malformed-message error: %v", err)
				}
				continue
			}
			again, err := Encoding.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			m2 := into()
			if err := Encoding.Unmarshal(again, m2); err != nil {
				t.Fatalf("re-encoded message does not decode: %v", err)
			}
			if again2, _ := Encoding.Marshal(m2); !bytes.Equal(again, again2) {
				t.Fatalf("encoding is not stable: %x vs %x", again, again2)
			}
		}
	})
}
