package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

func testKey(seed string) ed25519.PrivateKey {
	s := sha256.Sum256([]byte(seed))
	return ed25519.NewKeyFromSeed(s[:])
}

func fixedReceipt(t testing.TB) *Receipt {
	t.Helper()
	parent := objects.Sum(objects.CodecDagCBOR, []byte("parent"))
	commit := objects.Sum(objects.CodecDagCBOR, []byte("commit"))
	before, _ := objects.ParseBundleHash("0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")
	after, _ := objects.ParseBundleHash("0x" + strings.Repeat("ab", 32))
	r := &Receipt{Agent: "lumen", Task: "task-42", Attempt: "a1", Model: "m<&>", Adapter: "hermes",
		Parent: parent, From: parent, Commit: commit, TaskCommit: commit, Writes: 3,
		BundleBefore: before, BundleAfter: after, StateDeltaHash: objects.StateDeltaHash(before, after), Time: 1700000000}
	r.Sign(testKey("operator"))
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
	p, err := Parse(r.Line())
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

// knownLine is fixedReceipt signed by testKey("operator"), byte for byte as
// the runtime wrote it before the receipt became its own package: the line,
// the signature (ed25519 is deterministic) and the signed message are pinned.
const knownLine = `{"v":1,"agent":"lumen","task":"task-42","attempt":"a1","model":"m\u003c\u0026\u003e","adapter":"hermes","parent":"bafyreiheoeszncz3oecj7pciali6ictr5ijvtxwpvowpoczulcadpvh7bq","from":"bafyreiheoeszncz3oecj7pciali6ictr5ijvtxwpvowpoczulcadpvh7bq","commit":"bafyreievaxfmw7drb3ixcjp4y3ftm2pi3xfgzdgyv5vdd5vtzvsgatbqta","taskCommit":"bafyreievaxfmw7drb3ixcjp4y3ftm2pi3xfgzdgyv5vdd5vtzvsgatbqta","writes":3,"bundleBefore":"0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470","bundleAfter":"0xabababababababababababababababababababababababababababababababab","stateDeltaHash":"0x279babd5e7bb54b7622856ad674357709cfcaceb43400e291bc3732ec78b7c20","time":1700000000,"operator":"ce721b929f7c89a7d9e6bf636663d820db2d23930c1f8e547652dffc549e79cc","sig":"d5285082b345f75de169bbb4f0493ebca7380043e2241a3973ab025cf74e14766687c539c3a94ae30ea7092c8a2735246828fe1fe63704ca200dcebca5600e02"}`

func TestReceiptKnownAnswerLine(t *testing.T) {
	if got := string(fixedReceipt(t).Line()); got != knownLine {
		t.Fatalf("line\n%s\nwant\n%s", got, knownLine)
	}
	p, err := Parse([]byte(knownLine + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Verify(testKey("operator").Public().(ed25519.PublicKey)); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(p); string(b) != knownLine {
		t.Fatalf("MarshalJSON: %s", b)
	}
	i := strings.LastIndex(knownLine, `,"sig":"`)
	msg := SigningContext + knownLine[:i] + "}"
	if !ed25519.Verify(p.Operator, []byte(msg), p.Signature) || hex.EncodeToString(ed25519.Sign(testKey("operator"), []byte(msg))) != knownLine[i+8:len(knownLine)-2] {
		t.Fatal("the pinned signature is not ed25519 over SigningContext || the line without its sig member")
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
		p, err := Parse([]byte(edit(line)))
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
	f.Sign(testKey("operator"))
	if err := f.Verify(pub); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad delta: %v", err)
	}
}

func TestParseRefusesNonCanonical(t *testing.T) {
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
		if _, err := Parse([]byte(s)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	r := fixedReceipt(f)
	f.Add(r.Line())
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(strings.Replace(string(r.Line()), "lumen", "lümen\u2028", 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not matching ErrMalformed: %v", err)
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

// appendJSONString writes every string as encoding/json does, its fast
// path for plain ASCII included.
func TestAppendJSONStringIsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "task-7", "a b~c^d@e:f/g", "q\"uote", `back\slash`, "<html>&", "tab\t", "\x7f", "é", "\u2028", "\xff", "}{,"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

// What scanCanonical reads of a line is what encoding/json reads of it,
// wherever Parse accepts the line (Parse refuses any other line it reads).
func FuzzScanCanonical(f *testing.F) {
	r := fixedReceipt(f)
	f.Add(r.Line())
	f.Add([]byte(strings.Replace(string(r.Line()), "lumen", "lümen\u2028", 1)))
	f.Add([]byte(strings.Replace(string(r.Line()), `"writes":`, `"writes":-0`, 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		j, ok := scanCanonical(b)
		if !ok {
			return
		}
		var slow receiptJSON
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		serr := dec.Decode(&slow)
		if _, err := Parse(b); err != nil {
			return
		}
		if serr != nil || dec.More() {
			t.Fatalf("scanned and parsed, but encoding/json refuses it: %v", serr)
		}
		a, _ := json.Marshal(j)
		c, _ := json.Marshal(slow)
		if !bytes.Equal(a, c) {
			t.Fatalf("scanned %s\nencoding/json %s", a, c)
		}
	})
}
