package envelope

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the current implementation")

const vectorsPath = "testdata/vectors.json"

// vector is one known-answer test of the envelope. Plaintexts are either
// "hex:<digits>" or "pattern:<n>" (n bytes, byte i = i mod 251).
type vector struct {
	Name       string     `json:"name"`
	Key        string     `json:"key,omitempty"` // hex master key (key-file vectors)
	Passphrase string     `json:"passphrase,omitempty"`
	KDFSalt    string     `json:"kdfSalt,omitempty"` // hex
	KDF        *KDFParams `json:"kdf,omitempty"`
	ChunkSize  int        `json:"chunkSize"`
	RandomSalt string     `json:"randomSalt,omitempty"` // hex; set for randomized-mode vectors
	Plaintext  string     `json:"plaintext"`

	KeyID            string `json:"keyId"`
	PlaintextSHA256  string `json:"plaintextSha256"`
	HeaderHex        string `json:"headerHex"`
	CiphertextSize   int    `json:"ciphertextSize"`
	CiphertextSHA256 string `json:"ciphertextSha256"`
	CiphertextHex    string `json:"ciphertextHex,omitempty"` // whole blob, for small vectors
}

// vectorInputs are the inputs of the pinned vectors; the outputs live in
// testdata/vectors.json.
func vectorInputs() []vector {
	key := hex.EncodeToString(testKeySlice())
	return []vector{
		{Name: "empty", Key: key, ChunkSize: DefaultChunkSize, Plaintext: "hex:"},
		{Name: "short text", Key: key, ChunkSize: DefaultChunkSize, Plaintext: "hex:" + hex.EncodeToString([]byte("hello, agentstate\n"))},
		{Name: "four chunks, last short", Key: key, ChunkSize: 256, Plaintext: "pattern:1000"},
		{Name: "two chunks, last full", Key: key, ChunkSize: 256, Plaintext: "pattern:512"},
		{Name: "randomized, fixed salt", Key: key, ChunkSize: 256, RandomSalt: strings.Repeat("a5", SaltSize), Plaintext: "pattern:300"},
		{Name: "passphrase", Passphrase: "agentstate test passphrase", KDFSalt: "101112131415161718191a1b1c1d1e1f",
			KDF: &KDFParams{Time: 1, MemoryKiB: 64, Threads: 1}, ChunkSize: 256, Plaintext: "pattern:100"},
		{Name: "four default chunks", Key: key, ChunkSize: DefaultChunkSize, Plaintext: "pattern:200000"},
		{Name: "one MiB", Key: key, ChunkSize: DefaultChunkSize, Plaintext: "pattern:1048576"},
	}
}

func testKeySlice() []byte { k := testKey(); return k[:] }

func (v vector) plaintext(t testing.TB) []byte {
	switch kind, arg, _ := strings.Cut(v.Plaintext, ":"); kind {
	case "hex":
		b, err := hex.DecodeString(arg)
		if err != nil {
			t.Fatalf("%s: plaintext: %v", v.Name, err)
		}
		return b
	case "pattern":
		n, err := strconv.Atoi(arg)
		if err != nil {
			t.Fatalf("%s: plaintext: %v", v.Name, err)
		}
		return pattern(n)
	}
	t.Fatalf("%s: unknown plaintext form %q", v.Name, v.Plaintext)
	return nil
}

func (v vector) cipher(t testing.TB) *AESGCM {
	opts := Options{ChunkSize: v.ChunkSize}
	if v.RandomSalt != "" {
		s, err := hex.DecodeString(v.RandomSalt)
		if err != nil {
			t.Fatal(err)
		}
		opts.Randomized, opts.Rand = true, bytes.NewReader(s)
	}
	if v.Passphrase != "" {
		salt, err := hex.DecodeString(v.KDFSalt)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewAESGCMPassphrase([]byte(v.Passphrase), salt, *v.KDF, opts)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		return c
	}
	kb, err := hex.DecodeString(v.Key)
	if err != nil || len(kb) != KeySize {
		t.Fatalf("%s: bad key %q", v.Name, v.Key)
	}
	c, err := NewAESGCM(Key(kb), opts)
	if err != nil {
		t.Fatalf("%s: %v", v.Name, err)
	}
	return c
}

// compute fills the outputs of v from the implementation.
func (v vector) compute(t testing.TB) vector {
	pt := v.plaintext(t)
	c := v.cipher(t)
	ct := seal(t, c, pt)
	_, n, err := ParseHeader(ct)
	if err != nil {
		t.Fatal(err)
	}
	ph, ch := sha256.Sum256(pt), sha256.Sum256(ct)
	v.KeyID = c.KeyID().String()
	v.PlaintextSHA256 = hex.EncodeToString(ph[:])
	v.HeaderHex = hex.EncodeToString(ct[:n])
	v.CiphertextSize = len(ct)
	v.CiphertextSHA256 = hex.EncodeToString(ch[:])
	v.CiphertextHex = ""
	if len(ct) <= 2048 {
		v.CiphertextHex = hex.EncodeToString(ct)
	}
	return v
}

func loadVectors(t testing.TB) []vector {
	b, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("reading vectors (regenerate with: go test ./export/envelope -run TestKnownAnswers -update): %v", err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatalf("decoding %s: %v", vectorsPath, err)
	}
	return vs
}

// TestKnownAnswers pins the envelope bytes. Regenerate (after a deliberate
// format change, which also needs a new format version) with
//
//	go test ./export/envelope -run TestKnownAnswers -update
func TestKnownAnswers(t *testing.T) {
	inputs := vectorInputs()
	if *update {
		var out []vector
		for _, in := range inputs {
			out = append(out, in.compute(t))
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d vectors to %s", len(out), vectorsPath)
	}
	pinned := loadVectors(t)
	if len(pinned) != len(inputs) {
		t.Fatalf("%s has %d vectors, the test defines %d; run with -update", vectorsPath, len(pinned), len(inputs))
	}
	for i, want := range pinned {
		t.Run(want.Name, func(t *testing.T) {
			in := inputs[i]
			in.KeyID, in.PlaintextSHA256, in.HeaderHex, in.CiphertextSize, in.CiphertextSHA256, in.CiphertextHex =
				want.KeyID, want.PlaintextSHA256, want.HeaderHex, want.CiphertextSize, want.CiphertextSHA256, want.CiphertextHex
			if !reflect.DeepEqual(in, want) {
				t.Fatalf("vector inputs changed:\n file %+v\n test %+v", want, in)
			}
			got := in.compute(t)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("envelope bytes changed:\n got  %+v\n want %+v", got, want)
			}
			// The pinned blob decrypts to the plaintext.
			if want.CiphertextHex != "" {
				ct, err := hex.DecodeString(want.CiphertextHex)
				if err != nil {
					t.Fatal(err)
				}
				pt, err := open(in.cipher(t), ct)
				if err != nil {
					t.Fatalf("pinned blob does not decrypt: %v", err)
				}
				if sum := sha256.Sum256(pt); hex.EncodeToString(sum[:]) != want.PlaintextSHA256 {
					t.Fatal("pinned blob decrypts to another plaintext")
				}
			}
		})
	}
}

// TestReferenceImplementation runs testdata/reference.py, an independent
// implementation of docs/envelope.md in Python (package "cryptography"), which
// re-derives every pinned vector byte for byte and decrypts it. It is skipped
// only when python3 with that package is not installed.
func TestReferenceImplementation(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed; the reference cross-check needs it")
	}
	if err := exec.Command(py, "-c", "import cryptography.hazmat.primitives.kdf.argon2").Run(); err != nil {
		t.Skip("python3 package cryptography (>= 44, with Argon2id) not installed")
	}
	cmd := exec.Command(py, filepath.Join("testdata", "reference.py"), vectorsPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("reference implementation disagrees: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestGCMPrimitive checks the AES-256-GCM wiring against test cases 13 to 16 of
// McGrew and Viega, "The Galois/Counter Mode of Operation" (the vectors NIST
// SP 800-38D validation builds on).
func TestGCMPrimitive(t *testing.T) {
	const (
		k15  = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
		iv15 = "cafebabefacedbaddecaf888"
		p15  = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
		c15  = "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad"
	)
	zero32, zero12, zero16 := strings.Repeat("00", 32), strings.Repeat("00", 12), strings.Repeat("00", 16)
	cases := []struct{ name, key, iv, pt, aad, ct, tag string }{
		{"case 13", zero32, zero12, "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
		{"case 14", zero32, zero12, zero16, "", "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"},
		{"case 15", k15, iv15, p15, "", c15, "b094dac5d93471bdec1a502270e3cc6c"},
		{"case 16", k15, iv15, p15[:120], "feedfacedeadbeeffeedfacedeadbeefabaddad2", c15[:120], "76fc6ece0f4e1768cddf8853bb2d551b"},
	}
	dec := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range cases {
		block, err := aes.NewCipher(dec(tc.key))
		if err != nil {
			t.Fatal(err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			t.Fatal(err)
		}
		sealed := aead.Seal(nil, dec(tc.iv), dec(tc.pt), dec(tc.aad))
		if got := hex.EncodeToString(sealed); got != tc.ct+tc.tag {
			t.Errorf("%s: sealed %s, want %s", tc.name, got, tc.ct+tc.tag)
		}
		pt, err := aead.Open(nil, dec(tc.iv), sealed, dec(tc.aad))
		if err != nil || !bytes.Equal(pt, dec(tc.pt)) {
			t.Errorf("%s: open: %v", tc.name, err)
		}
	}
}

// TestVectorsDecryptWithoutEncrypt decrypts the pinned small blobs through a
// fresh cipher without encrypting first, as a restore on another machine would.
func TestVectorsDecryptWithoutEncrypt(t *testing.T) {
	for _, v := range loadVectors(t) {
		if v.CiphertextHex == "" {
			continue
		}
		ct, _ := hex.DecodeString(v.CiphertextHex)
		var c Cipher
		if v.Passphrase != "" {
			pc, err := NewAESGCMPassphrase([]byte(v.Passphrase), nil, KDFParams{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			c = pc
		} else {
			kb, _ := hex.DecodeString(v.Key)
			c = newCipher(t, Key(kb), Options{})
		}
		var out bytes.Buffer
		if err := c.Decrypt(context.Background(), &out, bytes.NewReader(ct)); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if !bytes.Equal(out.Bytes(), v.plaintext(t)) {
			t.Fatalf("%s: wrong plaintext", v.Name)
		}
	}
}
