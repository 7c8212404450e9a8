package envelope

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// noKDF makes any run of argon2id fail the test, and restores it after.
func noKDF(t testing.TB) {
	real := argon2IDKey
	argon2IDKey = func(pass, salt []byte, time, mem uint32, threads uint8, n uint32) []byte {
		t.Fatalf("argon2id ran with time %d, memory %d KiB, threads %d", time, mem, threads)
		return nil
	}
	t.Cleanup(func() { argon2IDKey = real })
}

// withKDFHeader returns blob with its header's KDF parameters replaced.
func withKDFHeader(t testing.TB, blob []byte, p KDFParams) []byte {
	h, n, err := ParseHeader(blob)
	if err != nil {
		t.Fatal(err)
	}
	h.KDF.Params = p
	raw, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return append(raw, blob[n:]...)
}

// A header may ask for argon2id parameters that take minutes of CPU before
// Decrypt can say "wrong key"; the decrypt limits refuse them without running
// the KDF (issue 13, finding 7d).
func TestHostileKDFHeader(t *testing.T) {
	salt := bytes.Repeat([]byte{3}, MinKDFSaltSize)
	enc, err := NewAESGCMPassphrase([]byte("pw"), salt, cheapKDF, Options{ChunkSize: MinChunkSize})
	if err != nil {
		t.Fatal(err)
	}
	blob := seal(t, enc, pattern(300))
	dec, err := NewAESGCMPassphrase([]byte("pw"), nil, KDFParams{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	noKDF(t)
	for name, tc := range map[string]struct {
		p    KDFParams
		what string
	}{
		"a minute of passes":      {KDFParams{Time: MaxKDFTime, MemoryKiB: 64 << 10, Threads: 2}, "passes"},
		"1 GiB times 8 passes":    {KDFParams{Time: 8, MemoryKiB: 1 << 20, Threads: 2}, "work"},
		"just over the work":      {KDFParams{Time: 2, MemoryKiB: DefaultMaxKDFWorkKiB/2 + 1, Threads: 1}, "work"},
		"4 GiB":                   {KDFParams{Time: 1, MemoryKiB: MaxKDFMemoryKiB, Threads: 1}, "memory"},
		"255 lanes":               {KDFParams{Time: 1, MemoryKiB: 64 << 10, Threads: 255}, "lanes"},
		"one pass over the limit": {KDFParams{Time: DefaultMaxKDFTime + 1, MemoryKiB: 64, Threads: 1}, "passes"},
	} {
		_, err := open(dec, withKDFHeader(t, blob, tc.p))
		var le *KDFLimitError
		if !errors.As(err, &le) || le.What != tc.what || !errors.Is(err, ErrKDFLimit) || !errors.Is(err, ErrBadHeader) {
			t.Errorf("%s: %v, want a KDFLimitError on %s", name, err, tc.what)
		}
	}
	// What agentstate writes is within every default limit.
	if err := dec.checkKDF(DefaultKDFParams()); err != nil {
		t.Fatalf("DefaultKDFParams above the decrypt limits: %v", err)
	}
	// Limits are options: a caller may allow more.
	big, err := NewAESGCMPassphrase([]byte("pw"), nil, KDFParams{}, Options{MaxKDFTime: 64, MaxKDFWorkKiB: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := big.checkKDF(KDFParams{Time: 64, MemoryKiB: 1 << 20, Threads: 2}); err != nil {
		t.Fatalf("raised limits still refuse: %v", err)
	}
}

// FuzzDecryptKDFHeader feeds mutated passphrase envelopes to a decrypt-only
// passphrase cipher: Decrypt never runs argon2id above its limits, never
// panics, and fails only with the package's sentinels.
func FuzzDecryptKDFHeader(f *testing.F) {
	salt := bytes.Repeat([]byte{3}, MinKDFSaltSize)
	enc, err := NewAESGCMPassphrase([]byte("pw"), salt, cheapKDF, Options{ChunkSize: MinChunkSize})
	if err != nil {
		f.Fatal(err)
	}
	blob := seal(f, enc, pattern(300))
	f.Add(blob)
	f.Add(withKDFHeader(f, blob, KDFParams{Time: 64, MemoryKiB: 1 << 20, Threads: 255}))
	f.Add(withKDFHeader(f, blob, KDFParams{Time: 4, MemoryKiB: 512, Threads: 4}))
	lim := Options{MaxKDFTime: 4, MaxKDFMemoryKiB: 1024, MaxKDFWorkKiB: 2048, MaxKDFThreads: 4}
	dec, err := NewAESGCMPassphrase([]byte("pw"), nil, KDFParams{}, lim)
	if err != nil {
		f.Fatal(err)
	}
	real := argon2IDKey
	f.Cleanup(func() { argon2IDKey = real })
	var over error
	argon2IDKey = func(pass, salt []byte, time, mem uint32, threads uint8, n uint32) []byte {
		if time > lim.MaxKDFTime || mem > lim.MaxKDFMemoryKiB || uint64(time)*uint64(mem) > lim.MaxKDFWorkKiB || threads > lim.MaxKDFThreads {
			over = errors.New("argon2id ran above the limits")
			return make([]byte, n)
		}
		return real(pass, salt, time, mem, threads, n)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		over = nil
		var out bytes.Buffer
		err := dec.Decrypt(context.Background(), &out, bytes.NewReader(b))
		if over != nil {
			t.Fatal(over)
		}
		if err != nil && !errors.Is(err, ErrBadHeader) && !errors.Is(err, ErrWrongKey) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrTampered) {
			t.Fatalf("error outside the package's sentinels: %v", err)
		}
	})
}
