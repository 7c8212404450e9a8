package envelope

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"filippo.io/age"
)

// Fixed identities (made once with age.GenerateX25519Identity, test use only),
// so fuzz workers and every run see the same keys.
const (
	testAgeIdentityA = "AGE-SECRET-KEY-1VDPGC9TQ0NJ863C3URCXSTDQ9MGZZDDWSD0CEV702G735SR43G6SH2FGJA"
	testAgeIdentityB = "AGE-SECRET-KEY-149UYHCRVFDQ3UKM2N3DMA4DY8V7M36ZDD9X9C6F0YSJ3HZKNA7PQTV04JC"
)

func testAgeIdentity(t testing.TB, s string) *age.X25519Identity {
	t.Helper()
	id, err := age.ParseX25519Identity(s)
	if err != nil {
		t.Fatalf("ParseX25519Identity: %v", err)
	}
	return id
}

func newAgeEncrypter(t testing.TB, ids ...*age.X25519Identity) *Age {
	t.Helper()
	var rs []string
	for _, id := range ids {
		rs = append(rs, id.Recipient().String())
	}
	a, err := NewAgeEncrypter(rs...)
	if err != nil {
		t.Fatalf("NewAgeEncrypter: %v", err)
	}
	return a
}

func newAgeDecrypter(t testing.TB, ids ...*age.X25519Identity) *Age {
	t.Helper()
	var is []age.Identity
	for _, id := range ids {
		is = append(is, id)
	}
	a, err := NewAgeDecrypter(is...)
	if err != nil {
		t.Fatalf("NewAgeDecrypter: %v", err)
	}
	return a
}

// ageLayout returns where an age blob's payload starts (after the header and
// the 16-byte nonce).
func ageLayout(t testing.TB, blob []byte) (headerEnd, payload int) {
	t.Helper()
	i := bytes.Index(blob, []byte("\n--- "))
	if i < 0 {
		t.Fatal("no age header MAC line")
	}
	j := bytes.IndexByte(blob[i+1:], '\n')
	headerEnd = i + 1 + j + 1
	return headerEnd, headerEnd + 16
}

const ageChunk = 64<<10 + 16

// swapB64 returns a copy of blob with the base64 character at i replaced by
// another valid one (not the last character of a line, whose low bits age's
// strict decoding constrains).
func swapB64(blob []byte, i int) []byte {
	b := bytes.Clone(blob)
	b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
	return b
}

func TestAgeRoundTrip(t *testing.T) {
	a, b := testAgeIdentity(t, testAgeIdentityA), testAgeIdentity(t, testAgeIdentityB)
	enc := newAgeEncrypter(t, a, b)
	if enc.ID() != CipherAgeV1 || enc.Recipients() != 2 {
		t.Fatalf("ID %q, %d recipients", enc.ID(), enc.Recipients())
	}
	for _, n := range []int{0, 1, 1000, 64 << 10, 64<<10 + 1, 200_000} {
		pt := randomBytes(uint64(n), n)
		blob := seal(t, enc, pt)
		if !bytes.HasPrefix(blob, []byte(AgeMagic)) {
			t.Fatalf("%d bytes: blob does not start with %q", n, AgeMagic)
		}
		// Each recipient decrypts on its own, through the package and
		// through the age library as any age tool would.
		for _, id := range []*age.X25519Identity{a, b} {
			got, err := open(newAgeDecrypter(t, id), blob)
			if err != nil || !bytes.Equal(got, pt) {
				t.Fatalf("%d bytes: Decrypt: %v", n, err)
			}
			r, err := age.Decrypt(bytes.NewReader(blob), id)
			if err != nil {
				t.Fatalf("%d bytes: age.Decrypt: %v", n, err)
			}
			got, err = io.ReadAll(r)
			if err != nil || !bytes.Equal(got, pt) {
				t.Fatalf("%d bytes: age.Decrypt read: %v", n, err)
			}
		}
		// age's output is randomized: the same plaintext seals differently.
		if again := seal(t, enc, pt); bytes.Equal(again, blob) {
			t.Fatalf("%d bytes: two age encryptions are identical", n)
		}
	}
}

func TestAgeReadsFilesOfTheAgeLibrary(t *testing.T) {
	id := testAgeIdentity(t, testAgeIdentityA)
	pt := pattern(70_000)
	var blob bytes.Buffer
	w, err := age.Encrypt(&blob, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	w.Write(pt)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := open(&Detect{Age: newAgeDecrypter(t, id)}, blob.Bytes())
	if err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("Detect on an age library file: %v", err)
	}
}

func TestAgeWrongIdentity(t *testing.T) {
	a, b := testAgeIdentity(t, testAgeIdentityA), testAgeIdentity(t, testAgeIdentityB)
	blob := seal(t, newAgeEncrypter(t, a), pattern(5000))
	got, err := open(newAgeDecrypter(t, b), blob)
	if !errors.Is(err, ErrWrongKey) || len(got) != 0 {
		t.Fatalf("wrong identity: %v, wrote %d bytes; want ErrWrongKey and nothing", err, len(got))
	}
	if !strings.Contains(err.Error(), "X25519") {
		t.Fatalf("wrong identity error does not name the blob's stanza type: %v", err)
	}
	// One of several identities matching is enough.
	if got, err := open(newAgeDecrypter(t, b, a), blob); err != nil || !bytes.Equal(got, pattern(5000)) {
		t.Fatalf("second of two identities: %v", err)
	}
}

func TestAgeContentHashMismatch(t *testing.T) {
	id := testAgeIdentity(t, testAgeIdentityA)
	enc := newAgeEncrypter(t, id)
	for _, n := range []int{0, 100, 64 << 10, 150_000} {
		pt := pattern(n)
		var out bytes.Buffer
		err := enc.Encrypt(context.Background(), &out, bytes.NewReader(pt), sha256.Sum256([]byte("something else")))
		if !errors.Is(err, ErrContentHash) {
			t.Fatalf("%d bytes: %v, want ErrContentHash", n, err)
		}
		// No final chunk was written: the output reads as truncated.
		if _, err := open(newAgeDecrypter(t, id), out.Bytes()); !errors.Is(err, ErrTruncated) {
			t.Fatalf("%d bytes: output of a refused Encrypt: %v, want ErrTruncated", n, err)
		}
	}
}

func TestAgeDirectionalCiphers(t *testing.T) {
	id := testAgeIdentity(t, testAgeIdentityA)
	dec := newAgeDecrypter(t, id)
	if err := dec.Encrypt(context.Background(), io.Discard, bytes.NewReader(nil), sha256.Sum256(nil)); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("Encrypt on a decrypter: %v", err)
	}
	enc := newAgeEncrypter(t, id)
	blob := seal(t, enc, []byte("x"))
	var mk *MissingKeyError
	if _, err := open(enc, blob); !errors.As(err, &mk) || !errors.Is(err, ErrMissingKey) {
		t.Fatalf("Decrypt on an encrypter: %v", err)
	}
	if _, err := NewAgeEncrypter(); !errors.Is(err, ErrAgeRecipient) {
		t.Fatalf("no recipients: %v", err)
	}
	if _, err := NewAgeDecrypter(); !errors.Is(err, ErrAgeIdentity) {
		t.Fatalf("no identities: %v", err)
	}
}

func TestParseAgeRecipient(t *testing.T) {
	good := testAgeIdentity(t, testAgeIdentityA).Recipient().String()
	if _, err := ParseAgeRecipient(good); err != nil {
		t.Fatalf("%s: %v", good, err)
	}
	if _, err := ParseAgeRecipient(" " + good + "\n"); err != nil {
		t.Fatalf("with spaces: %v", err)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "not an age X25519 recipient"},
		{"hello", "not an age X25519 recipient"},
		{testAgeIdentityB, "secret key"},
		{strings.ToLower(testAgeIdentityB), "secret key"},
		{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHsKLqeplhpW+uObz5dvMgjz1OxfM/XXUB+VHtZ6isGN", "SSH"},
		{"age1pq1" + strings.Repeat("q", 100), "post-quantum"},
		{"age1yubikey1q2w7u5ll2xnmwk8gydw9dq4x3jzqsyxc9yt6kkd7knuuefg2h5pgxx89ymz", "plugin"},
		{good[:len(good)-1] + "x", "not an age X25519 recipient"},
		{good + "q", "not an age X25519 recipient"},
	} {
		_, err := ParseAgeRecipient(tc.in)
		if !errors.Is(err, ErrAgeRecipient) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.30q: %v, want ErrAgeRecipient saying %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(strings.ToUpper(err.Error()), testAgeIdentityB[16:]) {
			t.Errorf("error repeats a secret key: %v", err)
		}
	}
}

func TestParseAgeRecipients(t *testing.T) {
	a := testAgeIdentity(t, testAgeIdentityA).Recipient().String()
	b := testAgeIdentity(t, testAgeIdentityB).Recipient().String()
	got, err := ParseAgeRecipients(strings.NewReader("# operator B\n" + a + "\n\n  " + b + "  \r\n# end\n"))
	if err != nil || len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("got %q, %v", got, err)
	}
	for _, in := range []string{"", "# only a comment\n", a + "\nnonsense\n", a + "\n" + testAgeIdentityA + "\n"} {
		if _, err := ParseAgeRecipients(strings.NewReader(in)); !errors.Is(err, ErrAgeRecipient) {
			t.Errorf("%q: %v, want ErrAgeRecipient", in, err)
		}
	}
	if _, err := ParseAgeRecipients(strings.NewReader(strings.Repeat("#"+strings.Repeat("x", 1000)+"\n", 1100))); !errors.Is(err, ErrAgeRecipient) {
		t.Errorf("a file over 1 MiB: %v", err)
	}
}

func TestAgeIdentityFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	id, err := GenerateAgeIdentity()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "b.agekey")
	if err := WriteAgeIdentityFile(ctx, path, id); err != nil {
		t.Fatal(err)
	}
	if err := WriteAgeIdentityFile(ctx, path, id); !errors.Is(err, os.ErrExist) {
		t.Fatalf("overwrite: %v, want fs.ErrExist", err)
	}
	st, _ := os.Stat(path)
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Fatalf("identity file mode %v, want 0600", st.Mode())
	}
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "# created: ") || lines[1] != "# public key: "+id.Recipient().String() || lines[2] != id.String() {
		t.Fatalf("identity file is not in age-keygen's format:\n%s", raw)
	}
	// The age library reads it as it reads age-keygen's files.
	if ids, err := age.ParseIdentities(bytes.NewReader(raw)); err != nil || len(ids) != 1 {
		t.Fatalf("age.ParseIdentities: %v", err)
	}
	ids, err := LoadAgeIdentities(ctx, path)
	if err != nil || len(ids) != 1 {
		t.Fatalf("LoadAgeIdentities: %v", err)
	}
	blob := seal(t, newAgeEncrypter(t, id), []byte("hand-over"))
	dec, _ := NewAgeDecrypter(ids...)
	if got, err := open(dec, blob); err != nil || string(got) != "hand-over" {
		t.Fatalf("decrypt with the loaded identity: %v", err)
	}

	if runtime.GOOS != "windows" {
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		ids, err := LoadAgeIdentities(ctx, path)
		var pe *KeyFilePermissionError
		if !errors.Is(err, ErrKeyFilePermissions) || !errors.As(err, &pe) || len(ids) != 1 || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("mode 0644: %v (%d identities), want the identities and ErrKeyFilePermissions", err, len(ids))
		}
	}

	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := id.String()
	for name, content := range map[string]string{
		"empty":        "",
		"comments":     "# nothing here\n",
		"garbage":      "hello\n",
		"bad key":      secret[:len(secret)-3] + "QQQ\n",
		"a recipient":  id.Recipient().String() + "\n",
		"an AES key":   string(EncodeKeyFile(testKey())),
		"over 64 KiB":  strings.Repeat("#", maxIdentityFileSize) + "\n" + secret + "\n",
		"binary bytes": "\xff\xfe" + secret,
	} {
		_, err := LoadAgeIdentities(ctx, write(strings.ReplaceAll(name, " ", "-"), content))
		if !errors.Is(err, ErrAgeIdentity) {
			t.Errorf("%s: %v, want ErrAgeIdentity", name, err)
		}
		if err != nil && strings.Contains(err.Error(), secret[16:40]) {
			t.Errorf("%s: error shows key material: %v", name, err)
		}
	}
	if _, err := LoadAgeIdentities(ctx, dir); !errors.Is(err, ErrAgeIdentity) {
		t.Errorf("a directory: %v", err)
	}
	if _, err := LoadAgeIdentities(ctx, filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

func TestAgeTamperingAndTruncation(t *testing.T) {
	id := testAgeIdentity(t, testAgeIdentityA)
	dec := newAgeDecrypter(t, id)
	pt := pattern(3*64<<10 + 500) // four chunks
	blob := seal(t, newAgeEncrypter(t, id), pt)
	hdrEnd, payload := ageLayout(t, blob)
	if want := payload + 3*ageChunk + 500 + 16; len(blob) != want {
		t.Fatalf("blob is %d bytes, want %d", len(blob), want)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(blob)
		b[i] ^= 0x01
		return b
	}
	check := func(name string, b []byte, want error) {
		t.Helper()
		got, err := open(dec, b)
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
		if !bytes.HasPrefix(pt, got) || len(got)%(64<<10) != 0 {
			t.Errorf("%s: wrote %d bytes that are not whole authenticated chunks", name, len(got))
		}
	}
	check("payload byte", flip(payload+10), ErrTampered)
	check("last chunk byte", flip(len(blob)-1), ErrTampered)
	check("nonce byte", flip(hdrEnd+3), ErrTampered)
	check("header MAC", swapB64(blob, hdrEnd-5), ErrTampered)
	check("intro", flip(3), ErrBadHeader)
	check("cut at a chunk boundary", blob[:payload+2*ageChunk], ErrTruncated)
	check("cut inside a chunk", blob[:payload+2*ageChunk+100], ErrTampered)
	check("cut after the header", blob[:payload], ErrTruncated)
	check("cut inside the nonce", blob[:hdrEnd+4], ErrTruncated)
	check("cut inside the header", blob[:hdrEnd-10], ErrTruncated)
	check("trailing data", append(bytes.Clone(blob), 0), ErrTampered)
	check("chunks swapped", append(append(append(bytes.Clone(blob[:payload]), blob[payload+ageChunk:payload+2*ageChunk]...), blob[payload:payload+ageChunk]...), blob[payload+2*ageChunk:]...), ErrTampered)
	// A stanza edit (one base64 character of the wrapped file key changed to
	// another valid one): the file key no longer unwraps.
	body := bytes.Index(blob, []byte("-> X25519 "))
	body += bytes.IndexByte(blob[body:], '\n') + 1 + 5
	check("stanza body", swapB64(blob, body), ErrWrongKey)
}

func TestAgeIOErrorsAndCancellation(t *testing.T) {
	id := testAgeIdentity(t, testAgeIdentityA)
	enc, dec := newAgeEncrypter(t, id), newAgeDecrypter(t, id)
	pt := pattern(200_000)
	blob := seal(t, enc, pt)
	ctx := context.Background()
	errNet := errors.New("connection reset")
	for _, cut := range []int{0, 10, 150, 70_000} {
		err := dec.Decrypt(ctx, io.Discard, &failingReader{data: blob[:cut], err: errNet})
		if !errors.Is(err, errNet) || errors.Is(err, ErrTampered) || errors.Is(err, ErrTruncated) {
			t.Errorf("read error after %d bytes: %v, want the read error", cut, err)
		}
		err = (&Detect{Age: dec}).Decrypt(ctx, io.Discard, &failingReader{data: blob[:cut], err: errNet})
		if !errors.Is(err, errNet) {
			t.Errorf("Detect: read error after %d bytes: %v, want the read error", cut, err)
		}
		if err := enc.Encrypt(ctx, io.Discard, &failingReader{data: pt[:cut], err: errNet}, sha256.Sum256(pt)); !errors.Is(err, errNet) {
			t.Errorf("plaintext read error after %d bytes: %v", cut, err)
		}
	}
	for _, limit := range []int{0, 100, 1000, 70_000} {
		if err := enc.Encrypt(ctx, &failingWriter{limit: limit}, bytes.NewReader(pt), sha256.Sum256(pt)); !errors.Is(err, errDisk) {
			t.Errorf("Encrypt write error at %d: %v", limit, err)
		}
		if err := dec.Decrypt(ctx, &failingWriter{limit: limit}, bytes.NewReader(blob)); !errors.Is(err, errDisk) {
			t.Errorf("Decrypt write error at %d: %v", limit, err)
		}
	}

	done, cancel := context.WithCancel(ctx)
	cancel()
	var out bytes.Buffer
	if err := enc.Encrypt(done, &out, bytes.NewReader(pt), sha256.Sum256(pt)); !errors.Is(err, context.Canceled) || out.Len() != 0 {
		t.Errorf("Encrypt on a cancelled context: %v, wrote %d", err, out.Len())
	}
	if err := (&Detect{Age: dec}).Decrypt(done, &out, bytes.NewReader(blob)); !errors.Is(err, context.Canceled) || out.Len() != 0 {
		t.Errorf("Decrypt on a cancelled context: %v, wrote %d", err, out.Len())
	}
	mid, cancel := context.WithCancel(ctx)
	err := dec.Decrypt(mid, &out, &cancelAfter{r: bytes.NewReader(blob), n: 70_000, cancel: cancel})
	if !errors.Is(err, context.Canceled) || out.Len() >= len(pt) || !bytes.Equal(out.Bytes(), pt[:out.Len()]) {
		t.Errorf("Decrypt cancelled mid-stream: %v, wrote %d", err, out.Len())
	}
	mid, cancel = context.WithCancel(ctx)
	out.Reset()
	err = enc.Encrypt(mid, &out, &cancelAfter{r: bytes.NewReader(pt), n: 70_000, cancel: cancel}, sha256.Sum256(pt))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Encrypt cancelled mid-stream: %v", err)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestDetect(t *testing.T) {
	id := testAgeIdentity(t, testAgeIdentityA)
	aes := newCipher(t, testKey(), Options{ChunkSize: MinChunkSize})
	ageDec := newAgeDecrypter(t, id)
	pt := pattern(3000)
	aesBlob := seal(t, aes, pt)
	ageBlob := seal(t, newAgeEncrypter(t, id), pt)
	both := &Detect{AES: aes, Age: ageDec}

	for name, blob := range map[string][]byte{"aes": aesBlob, "age": ageBlob} {
		if got, err := open(both, blob); err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("%s blob: %v", name, err)
		}
	}
	if got, err := open(&Detect{AES: aes}, aesBlob); err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("aes blob with AES only: %v", err)
	}
	if got, err := open(&Detect{Age: ageDec}, ageBlob); err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("age blob with age only: %v", err)
	}

	// The missing key is named, and nothing past the magic was read.
	for _, tc := range []struct {
		d      *Detect
		blob   []byte
		format string
		says   string
	}{
		{&Detect{AES: aes}, ageBlob, CipherAgeV1, "encrypted to age recipients"},
		{&Detect{Age: ageDec}, aesBlob, CipherAES256GCMv1, "AES-256-GCM envelope"},
		{&Detect{}, ageBlob, CipherAgeV1, "age identity"},
	} {
		cr := &countingReader{r: bytes.NewReader(tc.blob)}
		var out bytes.Buffer
		err := tc.d.Decrypt(context.Background(), &out, cr)
		var mk *MissingKeyError
		if !errors.As(err, &mk) || mk.Format != tc.format || !strings.Contains(err.Error(), tc.says) || out.Len() != 0 {
			t.Errorf("%s blob: %v, want a MissingKeyError for %s", tc.format, err, tc.format)
		}
		if cr.n > len(AgeMagic) {
			t.Errorf("%s blob: read %d bytes before deciding, want at most %d", tc.format, cr.n, len(AgeMagic))
		}
	}

	// What is neither, or too short to tell.
	for _, tc := range []struct {
		name string
		blob []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"magic prefix", []byte("AGS"), ErrTruncated},
		{"age magic prefix", []byte("age-encryption.or"), ErrTruncated},
		{"age magic without newline", []byte("age-encryption.org/v1"), ErrTruncated},
		{"AGSENV alone", []byte("AGSENV"), ErrTruncated},
		{"age magic alone", []byte(AgeMagic), ErrTruncated},
		{"age header without MAC line", []byte(AgeMagic + "-> X25519 abc\n\n\n"), ErrTruncated},
		{"age header with a bad stanza", []byte(AgeMagic + "-> \n--- x\n"), ErrBadHeader},
		{"age v2", []byte("age-encryption.org/v2\n-> X25519 x\n"), ErrBadHeader},
		{"armored age", []byte("-----BEGIN AGE ENCRYPTED FILE-----\n"), ErrBadHeader},
		{"tar", append(make([]byte, 512), "ustar"...), ErrBadHeader},
		{"text", []byte("hello, agentstate\n"), ErrBadHeader},
		{"zip", []byte("PK\x03\x04 this is a zip file, and it goes on and on"), ErrBadHeader},
	} {
		var out bytes.Buffer
		err := both.Decrypt(context.Background(), &out, bytes.NewReader(tc.blob))
		if !errors.Is(err, tc.want) || out.Len() != 0 {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := both.Encrypt(context.Background(), io.Discard, bytes.NewReader(pt), sha256.Sum256(pt)); !errors.Is(err, ErrBadOptions) {
		t.Errorf("Detect.Encrypt: %v", err)
	}
}

// FuzzDetectDecrypt feeds mutated AES and age blobs to a Detect holding both
// keys. It must never panic, must fail with one of the package's sentinels,
// may only succeed with one of the original plaintexts, and may only write a
// prefix of one.
func FuzzDetectDecrypt(f *testing.F) {
	id := testAgeIdentity(f, testAgeIdentityA)
	aes := newCipher(f, testKey(), Options{ChunkSize: MinChunkSize})
	d := &Detect{AES: aes, Age: newAgeDecrypter(f, id)}
	enc := newAgeEncrypter(f, id, testAgeIdentity(f, testAgeIdentityB))
	var plaintexts [][]byte
	for _, n := range []int{0, 1, 100, 700} {
		pt := randomBytes(uint64(n)+7, n)
		plaintexts = append(plaintexts, pt)
		f.Add(seal(f, aes, pt))
		ab := seal(f, enc, pt)
		f.Add(ab)
		f.Add(ab[:len(ab)-1])
	}
	f.Add([]byte(AgeMagic + "-> X25519 \n--- \n"))
	f.Add([]byte(AgeMagic))
	f.Add([]byte("AGSENV"))
	f.Fuzz(func(t *testing.T, blob []byte) {
		var out bytes.Buffer
		err := d.Decrypt(context.Background(), &out, bytes.NewReader(blob))
		if err == nil {
			for _, pt := range plaintexts {
				if bytes.Equal(out.Bytes(), pt) {
					return
				}
			}
			t.Fatalf("a blob decrypted to none of the original plaintexts (%d bytes)", out.Len())
		}
		if !errors.Is(err, ErrBadHeader) && !errors.Is(err, ErrWrongKey) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrTampered) {
			t.Fatalf("error outside the package's sentinels: %v", err)
		}
		for _, pt := range plaintexts {
			if bytes.HasPrefix(pt, out.Bytes()) {
				return
			}
		}
		t.Fatalf("Decrypt wrote %d bytes that are no original's prefix", out.Len())
	})
}
