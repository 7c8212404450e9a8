package runtime

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

func fixedReceipt(t testing.TB) *Receipt {
	t.Helper()
	parent := objects.Sum(objects.CodecDagCBOR, []byte("parent"))
	commit := objects.Sum(objects.CodecDagCBOR, []byte("commit"))
	before, _ := objects.ParseBundleHash("0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")
	after, _ := objects.ParseBundleHash("0x" + strings.Repeat("ab", 32))
	r := &Receipt{Agent: "lumen", Task: "task-42", Attempt: "a1", Model: "m<&>", Adapter: "hermes",
		Parent: parent, From: parent, Commit: commit, TaskCommit: commit, Writes: 3,
		BundleBefore: before, BundleAfter: after, StateDeltaHash: objects.StateDeltaHash(before, after), Time: 1700000000}
	r.sign(testKey("operator"))
	return r
}

// The exact bytes of a receipt and of what is signed: a known-answer test
// pinning the encoding documented on Receipt and in docs/runtime.md.
func TestReceiptEncodingKnownAnswer(t *testing.T) {
	r := fixedReceipt(t)
	line := string(r.Line())
	wantPrefix := `{"v":1,"agent":"lumen","task":"task-42","attempt":"a1","model":"m\u003c\u0026\u003e","adapter":"hermes","parent":"` + r.Parent.String() +
		`","from":"` + r.Parent.String() + `","commit":"` + r.Commit.String() + `","taskCommit":"` + r.Commit.String() +
		`","writes":3,"bundleBefore":"0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470","bundleAfter":"0x` + strings.Repeat("ab", 32) +
		`","stateDeltaHash":"` + r.StateDeltaHash.String() + `","time":1700000000,"operator":"` + hex.EncodeToString(testKey("operator").Public().(ed25519.PublicKey)) + `","sig":"`
	if !strings.HasPrefix(line, wantPrefix) || !strings.HasSuffix(line, `"}`) || len(line) != len(wantPrefix)+128+2 {
		t.Fatalf("line\n%s\nwant prefix\n%s", line, wantPrefix)
	}
	// Anyone can check the signature from the line alone: drop the sig member.
	i := strings.LastIndex(line, `,"sig":"`)
	signed := SigningContext + line[:i] + "}"
	sig, _ := hex.DecodeString(line[i+8 : len(line)-2])
	if !ed25519.Verify(r.Operator, []byte(signed), sig) {
		t.Fatal("the documented signed message does not verify")
	}
	// ed25519 is deterministic: the same receipt and key give the same line.
	if again := fixedReceipt(t); !bytes.Equal(again.Line(), r.Line()) {
		t.Fatal("signing is not reproducible")
	}
	p, err := ParseReceipt(r.Line())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Verify(r.Operator); err != nil {
		t.Fatal(err)
	}
	if p.Agent != r.Agent || p.Commit != r.Commit || p.BundleAfter != r.BundleAfter || p.Writes != 3 || p.Time != r.Time {
		t.Fatalf("round trip %+v", p)
	}
}

func TestReceiptTamperingDetected(t *testing.T) {
	r := fixedReceipt(t)
	pub := r.Operator
	line := string(r.Line())
	other := testKey("someone else").Public().(ed25519.PublicKey)
	if err := r.Verify(other); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("foreign key: %v", err)
	}
	if err := r.VerifyAny([]ed25519.PublicKey{other}); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("untrusted operator: %v", err)
	}
	if err := r.VerifyAny([]ed25519.PublicKey{other, pub}); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(string) string{
		"task":   func(s string) string { return strings.Replace(s, "task-42", "task-43", 1) },
		"writes": func(s string) string { return strings.Replace(s, `"writes":3`, `"writes":4`, 1) },
		"time":   func(s string) string { return strings.Replace(s, "1700000000", "1700000001", 1) },
		"after": func(s string) string {
			return strings.Replace(s, strings.Repeat("ab", 32), strings.Repeat("ac", 32), 1)
		},
		"sig byte": func(s string) string { return s[:len(s)-4] + "00\"}" },
	} {
		p, err := ParseReceipt([]byte(edit(line)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := p.Verify(pub); err == nil {
			t.Fatalf("%s: tampered receipt verified", name)
		}
	}
	// A forged delta hash, even when properly signed, is refused.
	f := fixedReceipt(t)
	f.StateDeltaHash = f.BundleAfter
	f.sign(testKey("operator"))
	if err := f.Verify(pub); !errors.Is(err, ErrBadReceipt) {
		t.Fatalf("bad delta: %v", err)
	}
}

func TestParseReceiptRefusesNonCanonical(t *testing.T) {
	line := string(fixedReceipt(t).Line())
	for name, s := range map[string]string{
		"empty":     "",
		"not json":  "hello",
		"space":     strings.Replace(line, `"v":1,`, `"v": 1,`, 1),
		"reordered": strings.Replace(strings.Replace(line, `"agent":"lumen","task":"task-42"`, `"task":"task-42","agent":"lumen"`, 1), "", "", 0),
		"unknown":   strings.Replace(line, `{"v":1,`, `{"v":1,"x":1,`, 1),
		"missing":   strings.Replace(line, `"attempt":"a1",`, "", 1),
		"version":   strings.Replace(line, `"v":1`, `"v":2`, 1),
		"upper hex": strings.Replace(line, "0xc5d2", "0xC5D2", 1),
		"bad cid":   strings.Replace(line, `"parent":"b`, `"parent":"x`, 1),
		"short sig": line[:len(line)-4] + `"}`,
		"escaped":   strings.Replace(line, `m\u003c`, `m<`, 1),
		"trailing":  line + " {}",
	} {
		if _, err := ParseReceipt([]byte(s)); !errors.Is(err, ErrBadReceipt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzParseReceipt(f *testing.F) {
	r := fixedReceipt(f)
	f.Add(r.Line())
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(strings.Replace(string(r.Line()), "lumen", "lümen\u2028", 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseReceipt(b)
		if err != nil {
			if !errors.Is(err, ErrBadReceipt) {
				t.Fatalf("error not matching ErrBadReceipt: %v", err)
			}
			return
		}
		// Whatever parses re-encodes to the same bytes.
		if !bytes.Equal(p.Line(), bytes.TrimRight(b, "\r\n")) {
			t.Fatalf("re-encoding differs:\n%s\n%s", p.Line(), b)
		}
		_ = p.Verify(p.Operator)
	})
}
