package envelope

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"
)

// fuzzCorpus returns real envelopes sealed by c and their plaintexts.
func fuzzCorpus(f *testing.F, c *AESGCM) (blobs, plaintexts [][]byte) {
	for _, n := range []int{0, 1, 100, 255, 256, 257, 700, 1024} {
		pt := randomBytes(uint64(n)+1, n)
		blobs = append(blobs, seal(f, c, pt))
		plaintexts = append(plaintexts, pt)
	}
	// A fixed "random" salt: fuzz workers rebuild the corpus and must get the
	// same bytes.
	r := newCipher(f, testKey(), Options{ChunkSize: MinChunkSize, Randomized: true, Rand: bytes.NewReader(bytes.Repeat([]byte{0x5a}, SaltSize))})
	pt := pattern(600)
	blobs = append(blobs, seal(f, r, pt))
	plaintexts = append(plaintexts, pt)
	return blobs, plaintexts
}

// FuzzDecrypt feeds mutated real envelopes to Decrypt. It must never panic, must
// fail on anything but an original blob, must fail with one of the package's
// sentinels, and may only ever write a prefix of an original plaintext.
func FuzzDecrypt(f *testing.F) {
	c := newCipher(f, testKey(), Options{ChunkSize: MinChunkSize})
	blobs, plaintexts := fuzzCorpus(f, c)
	for _, b := range blobs {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, blob []byte) {
		var out bytes.Buffer
		err := c.Decrypt(context.Background(), &out, bytes.NewReader(blob))
		if err == nil {
			for i, b := range blobs {
				if bytes.Equal(b, blob) {
					if !bytes.Equal(out.Bytes(), plaintexts[i]) {
						t.Fatal("an original blob decrypted to the wrong plaintext")
					}
					return
				}
			}
			t.Fatalf("a blob that is none of the originals decrypted without error (%d bytes)", len(blob))
		}
		if !errors.Is(err, ErrBadHeader) && !errors.Is(err, ErrWrongKey) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrTampered) {
			t.Fatalf("error outside the package's sentinels: %v", err)
		}
		if out.Len() == 0 {
			return
		}
		for _, pt := range plaintexts {
			if bytes.HasPrefix(pt, out.Bytes()) && out.Len()%MinChunkSize == 0 {
				return
			}
		}
		t.Fatalf("Decrypt wrote %d bytes that are not whole authenticated chunks of an original", out.Len())
	})
}

// FuzzParseHeader: never panics; whatever parses re-encodes to the same bytes.
func FuzzParseHeader(f *testing.F) {
	for _, h := range sampleHeaders() {
		raw, err := h.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte("AGSENV"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseHeader(b)
		if err != nil {
			if !errors.Is(err, ErrBadHeader) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("error outside the sentinels: %v", err)
			}
			return
		}
		raw, err := h.MarshalBinary()
		if err != nil {
			t.Fatalf("a parsed header does not encode: %v", err)
		}
		if !bytes.Equal(raw, b[:n]) {
			t.Fatalf("header is not canonical:\n in  %x\n out %x", b[:n], raw)
		}
	})
}

// FuzzParseKeyFile: never panics; a parsed key survives its own encoding.
func FuzzParseKeyFile(f *testing.F) {
	k := testKey()
	f.Add(EncodeKeyFile(k))
	f.Add(k[:])
	f.Add([]byte("agskey1:00\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseKeyFile(b)
		if err != nil {
			if !errors.Is(err, ErrKeyFile) {
				t.Fatalf("error outside ErrKeyFile: %v", err)
			}
			return
		}
		again, err := ParseKeyFile(EncodeKeyFile(got))
		if err != nil || again != got {
			t.Fatalf("encode/parse changed the key: %v", err)
		}
	})
}

// FuzzRoundTrip: any plaintext at any chunk size survives Encrypt then Decrypt.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add([]byte("hello"), uint16(1))
	f.Add(pattern(1000), uint16(300))
	f.Fuzz(func(t *testing.T, pt []byte, extra uint16) {
		c := newCipher(t, testKey(), Options{ChunkSize: MinChunkSize + int(extra)})
		var ct bytes.Buffer
		if err := c.Encrypt(context.Background(), &ct, bytes.NewReader(pt), sha256.Sum256(pt)); err != nil {
			t.Fatal(err)
		}
		if want, _ := c.CiphertextSize(int64(len(pt))); int64(ct.Len()) != want {
			t.Fatalf("size %d, CiphertextSize %d", ct.Len(), want)
		}
		got, err := open(c, ct.Bytes())
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
