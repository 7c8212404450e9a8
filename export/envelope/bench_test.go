package envelope

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"
)

var benchSizes = []int{64 << 10, 16 << 20}

func BenchmarkEncrypt(b *testing.B) {
	for _, mode := range []string{"deterministic", "randomized"} {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/%dKiB", mode, n>>10), func(b *testing.B) {
				c := newCipher(b, testKey(), Options{Randomized: mode == "randomized"})
				pt := randomBytes(1, n)
				sum := sha256.Sum256(pt)
				ctx := context.Background()
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if err := c.Encrypt(ctx, io.Discard, bytes.NewReader(pt), sum); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkDecrypt(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%dKiB", n>>10), func(b *testing.B) {
			c := newCipher(b, testKey(), Options{})
			ct := seal(b, c, randomBytes(1, n))
			ctx := context.Background()
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Decrypt(ctx, io.Discard, bytes.NewReader(ct)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRawGCM is the primitive alone, 64 KiB seals: the ceiling the envelope
// is compared with.
func BenchmarkRawGCM(b *testing.B) {
	k := testKey()
	block, _ := aes.NewCipher(k[:])
	aead, _ := cipher.NewGCM(block)
	buf := make([]byte, 64<<10, 64<<10+16)
	nonce := make([]byte, 12)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		aead.Seal(buf[:0], nonce, buf[:64<<10], nil)
	}
}

// BenchmarkSHA256 is the content-hash check deterministic Encrypt performs.
func BenchmarkSHA256(b *testing.B) {
	buf := randomBytes(1, 64<<10)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		sha256.Sum256(buf)
	}
}

// BenchmarkKeyFromPassphrase measures the default argon2id parameters.
func BenchmarkKeyFromPassphrase(b *testing.B) {
	salt := bytes.Repeat([]byte{1}, MinKDFSaltSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := KeyFromPassphrase([]byte("passphrase"), salt, DefaultKDFParams()); err != nil {
			b.Fatal(err)
		}
	}
}
