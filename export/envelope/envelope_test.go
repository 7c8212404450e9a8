package envelope

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// testKey is the fixed key 0x00, 0x01, ..., 0x1f used by tests and vectors.
func testKey() Key {
	var k Key
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

// pattern returns n bytes where byte i is i mod 251 (a period prime to every
// chunk size, so no two chunks of one plaintext are equal).
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func newCipher(t testing.TB, k Key, opts Options) *AESGCM {
	t.Helper()
	c, err := NewAESGCM(k, opts)
	if err != nil {
		t.Fatalf("NewAESGCM: %v", err)
	}
	return c
}

func seal(t testing.TB, c Cipher, pt []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := c.Encrypt(context.Background(), &out, bytes.NewReader(pt), sha256.Sum256(pt)); err != nil {
		t.Fatalf("Encrypt(%d bytes): %v", len(pt), err)
	}
	return out.Bytes()
}

func open(c Cipher, ct []byte) ([]byte, error) {
	var out bytes.Buffer
	err := c.Decrypt(context.Background(), &out, bytes.NewReader(ct))
	return out.Bytes(), err
}

// layout describes where the chunks of a blob sealed by c lie.
type layout struct {
	header, chunk, chunks int // header size, sealed chunk size (with tag), chunk count
}

func layoutOf(t testing.TB, ct []byte) layout {
	t.Helper()
	h, n, err := ParseHeader(ct)
	if err != nil {
		t.Fatalf("ParseHeader: %v", err)
	}
	full := int(h.ChunkSize) + tagSize
	body := len(ct) - n
	chunks := (body + full - 1) / full
	if chunks == 0 {
		chunks = 1
	}
	return layout{header: n, chunk: full, chunks: chunks}
}

func (l layout) chunkStart(i int) int { return l.header + i*l.chunk }

func TestRoundTripSizes(t *testing.T) {
	k := testKey()
	for _, cs := range []int{MinChunkSize, 1000, DefaultChunkSize} {
		sizes := []int{0, 1, cs - 1, cs, cs + 1, 2 * cs, 3*cs + 7}
		if cs == DefaultChunkSize {
			sizes = append(sizes, 5<<20+3, 4<<20)
		}
		for _, randomized := range []bool{false, true} {
			c := newCipher(t, k, Options{ChunkSize: cs, Randomized: randomized})
			for _, n := range sizes {
				t.Run(fmt.Sprintf("chunk=%d/random=%v/n=%d", cs, randomized, n), func(t *testing.T) {
					pt := randomBytes(uint64(n), n)
					ct := seal(t, c, pt)
					want, err := c.CiphertextSize(int64(n))
					if err != nil {
						t.Fatal(err)
					}
					if int64(len(ct)) != want {
						t.Fatalf("ciphertext is %d bytes, CiphertextSize says %d", len(ct), want)
					}
					got, err := open(c, ct)
					if err != nil {
						t.Fatalf("Decrypt: %v", err)
					}
					if !bytes.Equal(got, pt) {
						t.Fatalf("round trip changed the plaintext (%d bytes in, %d out)", len(pt), len(got))
					}
					h, _, err := ParseHeader(ct)
					if err != nil {
						t.Fatal(err)
					}
					if h.CipherID != CipherAES256GCMv1 || h.ChunkSize != uint32(cs) || h.KeyID != k.ID() || h.Randomized != randomized || h.KDF != nil {
						t.Fatalf("header %+v does not describe the cipher", h)
					}
				})
			}
		}
	}
}

// oneByteReader hands out one byte per Read, to prove chunking does not depend on
// how the source splits its reads.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestChunkingIndependentOfReadSizes(t *testing.T) {
	c := newCipher(t, testKey(), Options{ChunkSize: MinChunkSize})
	pt := pattern(3*MinChunkSize + 5)
	want := seal(t, c, pt)
	var out bytes.Buffer
	if err := c.Encrypt(context.Background(), &out, oneByteReader{bytes.NewReader(pt)}, sha256.Sum256(pt)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatal("encrypting from a one-byte-at-a-time reader gave different bytes")
	}
	var dec bytes.Buffer
	if err := c.Decrypt(context.Background(), &dec, oneByteReader{bytes.NewReader(want)}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dec.Bytes(), pt) {
		t.Fatal("decrypting from a one-byte-at-a-time reader changed the plaintext")
	}
}

func TestDeterminism(t *testing.T) {
	k := testKey()
	pt := pattern(200_000)
	c := newCipher(t, k, Options{})
	a, b := seal(t, c, pt), seal(t, newCipher(t, k, Options{}), pt)
	if !bytes.Equal(a, b) {
		t.Fatal("same plaintext and key gave different blobs in deterministic mode")
	}

	k2 := k
	k2[31] ^= 1
	other := seal(t, newCipher(t, k2, Options{}), pt)
	if bytes.Equal(a[len(a)-100:], other[len(other)-100:]) {
		t.Fatal("different keys gave the same ciphertext")
	}

	pt2 := bytes.Clone(pt)
	pt2[len(pt2)-1] ^= 1
	d := seal(t, c, pt2)
	la := layoutOf(t, a)
	// A one-byte change at the end moves the whole blob, from chunk 0 on: the file
	// key depends on the content hash, so chunks are never shared between blobs.
	if bytes.Equal(a[la.header:la.header+64], d[la.header:la.header+64]) {
		t.Fatal("plaintexts differing only in their last byte share their first chunk's ciphertext")
	}

	r := newCipher(t, k, Options{Randomized: true})
	r1, r2 := seal(t, r, pt), seal(t, r, pt)
	if bytes.Equal(r1, r2) {
		t.Fatal("randomized mode gave identical blobs twice")
	}
	for _, blob := range [][]byte{r1, r2} {
		got, err := open(c, blob) // a deterministic cipher with the same key opens both
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("randomized blob does not open: %v", err)
		}
	}
}

// The file key binds the whole header, so one plaintext under one key sealed with
// two chunk sizes never reuses a (key, nonce) pair.
func TestNoKeyReuseAcrossChunkSizes(t *testing.T) {
	k := testKey()
	pt := pattern(4096)
	a := seal(t, newCipher(t, k, Options{ChunkSize: 256}), pt)
	b := seal(t, newCipher(t, k, Options{ChunkSize: 512}), pt)
	ha, na, _ := ParseHeader(a)
	hb, nb, _ := ParseHeader(b)
	if ha.Salt != hb.Salt {
		t.Fatal("deterministic salt should depend only on key and content hash")
	}
	// Chunk 0 of both starts with the same 256 plaintext bytes under nonce index 0:
	// with a shared file key the first 256 ciphertext bytes would be equal.
	if bytes.Equal(a[na:na+256], b[nb:nb+256]) {
		t.Fatal("two chunk sizes share a file key")
	}
}

func TestWrongKey(t *testing.T) {
	k := testKey()
	pt := pattern(1000)
	ct := seal(t, newCipher(t, k, Options{ChunkSize: 256}), pt)
	k2 := k
	k2[0] ^= 0xff
	var out bytes.Buffer
	err := newCipher(t, k2, Options{}).Decrypt(context.Background(), &out, bytes.NewReader(ct))
	if !errors.Is(err, ErrWrongKey) {
		t.Fatalf("Decrypt with another key: %v, want ErrWrongKey", err)
	}
	var wk *WrongKeyError
	if !errors.As(err, &wk) || wk.Have != k2.ID() || wk.Want != k.ID() || wk.BlobUsesPassphrase {
		t.Fatalf("WrongKeyError = %+v, want have %s want %s", wk, k2.ID(), k.ID())
	}
	msg := err.Error()
	if !strings.Contains(msg, k2.ID().String()) || !strings.Contains(msg, k.ID().String()) {
		t.Fatalf("message %q does not name both key ids", msg)
	}
	if errors.Is(err, ErrTampered) || errors.Is(err, ErrTruncated) {
		t.Fatalf("wrong key must not read as tampering: %v", err)
	}
	if out.Len() != 0 {
		t.Fatalf("wrote %d bytes with the wrong key", out.Len())
	}
}

func TestKeyIDIsPinned(t *testing.T) {
	// HKDF-SHA256(ikm=00..1f, salt="", info="agentstate envelope v1: key id")[:16],
	// computed independently with Python's hmac module (see docs/envelope.md),
	// pinned so that a change to the derivation cannot pass unnoticed.
	got := testKey().ID().String()
	const want = "f993f1d55f1fcf07eda0ac355767b1cf"
	if got != want {
		t.Fatalf("key id of 00..1f = %s, want %s", got, want)
	}
}

func TestKeyStringHidesKey(t *testing.T) {
	k := testKey()
	for _, s := range []string{k.String(), fmt.Sprintf("%v", k), fmt.Sprintf("%#v", k), fmt.Sprint(k)} {
		if strings.Contains(s, "0001020304") || strings.Contains(s, "[0 1 2 3") {
			t.Fatalf("formatting a key shows its bytes: %q", s)
		}
	}
}

// checkPrefix asserts that what Decrypt wrote is exactly the plaintext of the
// first `chunks` chunks: never a byte of a chunk that failed authentication.
func checkPrefix(t *testing.T, got, pt []byte, chunkSize, chunks int) {
	t.Helper()
	n := min(chunks*chunkSize, len(pt))
	if !bytes.Equal(got, pt[:n]) {
		t.Fatalf("Decrypt wrote %d bytes, want exactly the %d authenticated bytes of chunks before the failure", len(got), n)
	}
}

func TestTamperEveryByte(t *testing.T) {
	const cs = 256
	c := newCipher(t, testKey(), Options{ChunkSize: cs})
	pt := pattern(3*cs + 100) // 4 chunks, the last one short
	ct := seal(t, c, pt)
	l := layoutOf(t, ct)
	if l.chunks != 4 {
		t.Fatalf("chunks = %d, want 4", l.chunks)
	}
	for pos := range ct {
		for _, bit := range []byte{0x01, 0x80} {
			bad := bytes.Clone(ct)
			bad[pos] ^= bit
			got, err := open(c, bad)
			if err == nil {
				t.Fatalf("flipping bit %#x of byte %d went unnoticed", bit, pos)
			}
			if !errors.Is(err, ErrTampered) && !errors.Is(err, ErrBadHeader) && !errors.Is(err, ErrWrongKey) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("byte %d: error %v is none of the sentinels", pos, err)
			}
			if pos < l.header {
				if len(got) != 0 {
					t.Fatalf("header byte %d flipped: wrote %d bytes", pos, len(got))
				}
				continue
			}
			chunk := (pos - l.header) / l.chunk
			if !errors.Is(err, ErrTampered) {
				t.Fatalf("byte %d (chunk %d) flipped: %v, want ErrTampered", pos, chunk, err)
			}
			var ce *ChunkError
			if !errors.As(err, &ce) || ce.Index != uint64(chunk) || ce.Offset != int64(l.chunkStart(chunk)) {
				t.Fatalf("byte %d flipped: error %v does not name chunk %d at %d", pos, err, chunk, l.chunkStart(chunk))
			}
			checkPrefix(t, got, pt, cs, chunk)
		}
	}
}

func TestTruncation(t *testing.T) {
	const cs = 256
	c := newCipher(t, testKey(), Options{ChunkSize: cs})
	pt := pattern(3*cs + 100)
	ct := seal(t, c, pt)
	l := layoutOf(t, ct)
	for n := 0; n < len(ct); n++ {
		got, err := open(c, ct[:n])
		if err == nil {
			t.Fatalf("blob cut to %d of %d bytes decrypted without error", n, len(ct))
		}
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrTampered) {
			t.Fatalf("cut to %d: %v, want ErrTruncated or ErrTampered", n, err)
		}
		body := n - l.header
		switch {
		case n < l.header:
			if !errors.Is(err, ErrTruncated) || len(got) != 0 {
				t.Fatalf("cut inside the header at %d: %v, wrote %d", n, err, len(got))
			}
		case body%l.chunk == 0:
			// Cut at a chunk boundary: always reported as truncation.
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("cut at chunk boundary %d: %v, want ErrTruncated", n, err)
			}
			checkPrefix(t, got, pt, cs, body/l.chunk-1+boolInt(body == 0))
		default:
			checkPrefix(t, got, pt, cs, body/l.chunk)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestChunkSurgery(t *testing.T) {
	const cs = 256
	c := newCipher(t, testKey(), Options{ChunkSize: cs})
	pt := pattern(4*cs + 10) // 5 chunks
	ct := seal(t, c, pt)
	l := layoutOf(t, ct)
	chunk := func(b []byte, i int) []byte {
		s := l.chunkStart(i)
		return b[s:min(s+l.chunk, len(b))]
	}
	assemble := func(hdr []byte, parts ...[]byte) []byte {
		out := bytes.Clone(hdr)
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	hdr := ct[:l.header]
	c0, c1, c2, c3, c4 := chunk(ct, 0), chunk(ct, 1), chunk(ct, 2), chunk(ct, 3), chunk(ct, 4)

	other := seal(t, c, randomBytes(7, len(pt)))
	o1 := chunk(other, 1)

	cases := []struct {
		name     string
		blob     []byte
		want     error
		atChunk  int // chunk the error names
		goodPart int // chunks whose plaintext may be written
	}{
		{"swap 0 and 1", assemble(hdr, c1, c0, c2, c3, c4), ErrTampered, 0, 0},
		{"swap 2 and 3", assemble(hdr, c0, c1, c3, c2, c4), ErrTampered, 2, 2},
		{"drop chunk 1", assemble(hdr, c0, c2, c3, c4), ErrTampered, 1, 1},
		{"duplicate chunk 1", assemble(hdr, c0, c1, c1, c2, c3, c4), ErrTampered, 2, 2},
		{"drop final chunk", assemble(hdr, c0, c1, c2, c3), ErrTruncated, 4, 3},
		{"final chunk moved earlier", assemble(hdr, c0, c4, c1, c2, c3), ErrTampered, 1, 1},
		{"chunk 1 from another blob", assemble(hdr, c0, o1, c2, c3, c4), ErrTampered, 1, 1},
		{"header of another blob", assemble(other[:l.header], c0, c1, c2, c3, c4), ErrTampered, 0, 0},
		{"one byte appended", assemble(hdr, c0, c1, c2, c3, c4, []byte{0}), ErrTampered, 4, 4},
		{"tag-size garbage appended", assemble(hdr, c0, c1, c2, c3, c4, make([]byte, 16)), ErrTampered, 4, 4},
		{"final chunk repeated", assemble(hdr, c0, c1, c2, c3, c4, c4), ErrTampered, 4, 4},
		{"blob repeated", assemble(ct, ct), ErrTampered, 4, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := open(c, tc.blob)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			var ce *ChunkError
			if !errors.As(err, &ce) || ce.Index != uint64(tc.atChunk) {
				t.Fatalf("error %v does not name chunk %d", err, tc.atChunk)
			}
			checkPrefix(t, got, pt, cs, tc.goodPart)
		})
	}

	// A blob whose final chunk is full-size, followed by a byte: the look-ahead
	// sees more data, so the last chunk is opened as non-final and fails; the
	// error says what happened.
	full := seal(t, c, pattern(2*cs))
	_, err := open(c, append(bytes.Clone(full), 'x'))
	var ce *ChunkError
	if !errors.As(err, &ce) || !errors.Is(err, ErrTampered) || !strings.Contains(ce.Detail, "after the final chunk") {
		t.Fatalf("trailing byte after a full final chunk: %v", err)
	}
}

func TestContentHashMismatch(t *testing.T) {
	c := newCipher(t, testKey(), Options{ChunkSize: 256})
	pt := pattern(1000)
	wrong := sha256.Sum256([]byte("not the plaintext"))
	var out bytes.Buffer
	err := c.Encrypt(context.Background(), &out, bytes.NewReader(pt), wrong)
	if !errors.Is(err, ErrContentHash) {
		t.Fatalf("Encrypt with a wrong content hash: %v, want ErrContentHash", err)
	}
	// What was written lacks its final chunk, so it never decrypts.
	if _, err := open(c, out.Bytes()); !errors.Is(err, ErrTruncated) {
		t.Fatalf("partial output of a failed Encrypt: %v, want ErrTruncated", err)
	}
	// Randomized mode does not use the content hash.
	r := newCipher(t, testKey(), Options{ChunkSize: 256, Randomized: true})
	out.Reset()
	if err := r.Encrypt(context.Background(), &out, bytes.NewReader(pt), [32]byte{}); err != nil {
		t.Fatalf("randomized Encrypt with a zero hash: %v", err)
	}
}

func TestCipherMismatchAndBadHeaders(t *testing.T) {
	c := newCipher(t, testKey(), Options{ChunkSize: 256})
	ct := seal(t, c, pattern(300))
	h, n, err := ParseHeader(ct)
	if err != nil {
		t.Fatal(err)
	}
	h.CipherID = "seal-tibe-v1"
	raw, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	_, err = open(c, append(raw, ct[n:]...))
	if !errors.Is(err, ErrBadHeader) || !strings.Contains(err.Error(), "seal-tibe-v1") {
		t.Fatalf("blob of another cipher: %v, want ErrBadHeader naming it", err)
	}

	for _, tc := range []struct {
		name string
		blob []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"magic prefix only", []byte("AGS"), ErrTruncated},
		{"not an envelope", []byte("PK\x03\x04 this is a zip"), ErrBadHeader},
		{"tar file", append(make([]byte, 512), "ustar"...), ErrBadHeader},
		{"wrong magic long", []byte("AGSENX\x01\x00\x0eaes-256-gcm-v1"), ErrBadHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := open(c, tc.blob); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// failingWriter fails after accepting limit bytes.
type failingWriter struct {
	limit int
	n     int
}

var errDisk = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		return 0, errDisk
	}
	w.n += len(p)
	return len(p), nil
}

// failingReader returns data then a non-EOF error.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestIOErrorsAreNotMistakenForTampering(t *testing.T) {
	c := newCipher(t, testKey(), Options{ChunkSize: 256})
	pt := pattern(2000)
	ct := seal(t, c, pt)
	ctx := context.Background()
	errNet := errors.New("connection reset")

	for _, cut := range []int{0, 10, 100, 600} {
		err := c.Decrypt(ctx, io.Discard, &failingReader{data: ct[:cut], err: errNet})
		if !errors.Is(err, errNet) || errors.Is(err, ErrTampered) || errors.Is(err, ErrTruncated) {
			t.Fatalf("read error after %d bytes: %v, want the read error", cut, err)
		}
		err = c.Encrypt(ctx, io.Discard, &failingReader{data: pt[:cut], err: errNet}, sha256.Sum256(pt))
		if !errors.Is(err, errNet) {
			t.Fatalf("plaintext read error after %d bytes: %v", cut, err)
		}
	}
	for _, limit := range []int{0, 100, 1000} {
		if err := c.Encrypt(ctx, &failingWriter{limit: limit}, bytes.NewReader(pt), sha256.Sum256(pt)); !errors.Is(err, errDisk) {
			t.Fatalf("Encrypt write error at %d: %v", limit, err)
		}
		if err := c.Decrypt(ctx, &failingWriter{limit: limit}, bytes.NewReader(ct)); !errors.Is(err, errDisk) {
			t.Fatalf("Decrypt write error at %d: %v", limit, err)
		}
	}
}

// cancelAfter cancels a context once n bytes have been read through it.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n -= n
	if c.n <= 0 {
		c.cancel()
	}
	return n, err
}

func TestContextCancellation(t *testing.T) {
	c := newCipher(t, testKey(), Options{ChunkSize: 256})
	pt := pattern(10_000)
	ct := seal(t, c, pt)

	done, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	if err := c.Encrypt(done, &out, bytes.NewReader(pt), sha256.Sum256(pt)); !errors.Is(err, context.Canceled) || out.Len() != 0 {
		t.Fatalf("Encrypt on a cancelled context: %v, wrote %d", err, out.Len())
	}
	if err := c.Decrypt(done, &out, bytes.NewReader(ct)); !errors.Is(err, context.Canceled) || out.Len() != 0 {
		t.Fatalf("Decrypt on a cancelled context: %v, wrote %d", err, out.Len())
	}

	ctx, cancel := context.WithCancel(context.Background())
	out.Reset()
	err := c.Encrypt(ctx, &out, &cancelAfter{r: bytes.NewReader(pt), n: 1000, cancel: cancel}, sha256.Sum256(pt))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Encrypt cancelled mid-stream: %v", err)
	}
	if out.Len() >= len(ct) {
		t.Fatalf("Encrypt cancelled mid-stream still wrote the whole blob")
	}

	ctx, cancel = context.WithCancel(context.Background())
	out.Reset()
	err = c.Decrypt(ctx, &out, &cancelAfter{r: bytes.NewReader(ct), n: 1000, cancel: cancel})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Decrypt cancelled mid-stream: %v", err)
	}
	if out.Len() >= len(pt) || !bytes.Equal(out.Bytes(), pt[:out.Len()]) {
		t.Fatalf("Decrypt cancelled mid-stream wrote %d bytes", out.Len())
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, cs := range []int{-1, 1, MinChunkSize - 1, MaxChunkSize + 1} {
		if _, err := NewAESGCM(testKey(), Options{ChunkSize: cs}); !errors.Is(err, ErrBadOptions) {
			t.Errorf("chunk size %d: %v, want ErrBadOptions", cs, err)
		}
	}
	c := newCipher(t, testKey(), Options{ChunkSize: MinChunkSize})
	if _, err := c.CiphertextSize(-1); !errors.Is(err, ErrBadOptions) {
		t.Errorf("CiphertextSize(-1): %v", err)
	}
	// 2^32 chunks of 256 bytes is the most a nonce counts; one byte more is too many.
	limit := int64(maxChunks) * MinChunkSize
	if _, err := c.CiphertextSize(limit); err != nil {
		t.Errorf("CiphertextSize(%d): %v", limit, err)
	}
	if _, err := c.CiphertextSize(limit + 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("CiphertextSize(%d): %v, want ErrTooLarge", limit+1, err)
	}
}

func TestRandomizedUsesRand(t *testing.T) {
	pt := pattern(500)
	mk := func() *AESGCM {
		return newCipher(t, testKey(), Options{Randomized: true, Rand: bytes.NewReader(bytes.Repeat([]byte{0xa5}, 64))})
	}
	a, b := seal(t, mk(), pt), seal(t, mk(), pt)
	if !bytes.Equal(a, b) {
		t.Fatal("randomized mode with the same random stream gave different blobs")
	}
	h, _, _ := ParseHeader(a)
	if h.Salt != [SaltSize]byte(bytes.Repeat([]byte{0xa5}, SaltSize)) || !h.Randomized {
		t.Fatalf("randomized header %+v does not carry the drawn salt", h)
	}
	empty := newCipher(t, testKey(), Options{Randomized: true, Rand: bytes.NewReader(nil)})
	if err := empty.Encrypt(context.Background(), io.Discard, bytes.NewReader(pt), [32]byte{}); !errors.Is(err, io.EOF) {
		t.Fatalf("randomized Encrypt without randomness: %v", err)
	}
}
