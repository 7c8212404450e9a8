package envelope_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentstate/agentstate/export/envelope"
)

// Seal a snapshot with a key and restore it the way a caller that must leave
// nothing behind on failure does: decrypt into a temporary file, rename on success.
func Example() {
	ctx := context.Background()
	var key envelope.Key
	for i := range key {
		key[i] = byte(i)
	}
	c, err := envelope.NewAESGCM(key, envelope.Options{})
	if err != nil {
		panic(err)
	}
	snapshot := []byte("a deterministic tar would go here")
	var blob bytes.Buffer
	if err := c.Encrypt(ctx, &blob, bytes.NewReader(snapshot), sha256.Sum256(snapshot)); err != nil {
		panic(err)
	}
	size, _ := c.CiphertextSize(int64(len(snapshot)))
	fmt.Println("blob bytes:", blob.Len(), "predicted:", size)

	dir, _ := os.MkdirTemp("", "restore")
	defer os.RemoveAll(dir)
	if err := restore(ctx, c, bytes.NewReader(blob.Bytes()), filepath.Join(dir, "snapshot.tar")); err != nil {
		panic(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "snapshot.tar"))
	fmt.Println(string(got))

	// A damaged blob leaves no file behind.
	bad := bytes.Clone(blob.Bytes())
	bad[len(bad)-1] ^= 1
	err = restore(ctx, c, bytes.NewReader(bad), filepath.Join(dir, "damaged.tar"))
	_, statErr := os.Stat(filepath.Join(dir, "damaged.tar"))
	fmt.Println(errors.Is(err, envelope.ErrTampered), errors.Is(statErr, os.ErrNotExist))
	// Output:
	// blob bytes: 124 predicted: 124
	// a deterministic tar would go here
	// true true
}

func restore(ctx context.Context, c envelope.Cipher, src io.Reader, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".restore-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := c.Decrypt(ctx, tmp, src); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Pick the cipher of a blob from its header, then decrypt it.
func ExampleReadHeader() {
	ctx := context.Background()
	var key envelope.Key
	c, _ := envelope.NewAESGCM(key, envelope.Options{ChunkSize: 1024})
	var blob bytes.Buffer
	_ = c.Encrypt(ctx, &blob, bytes.NewReader(nil), sha256.Sum256(nil))

	src := bytes.NewReader(blob.Bytes())
	h, raw, err := envelope.ReadHeader(ctx, src)
	if err != nil {
		panic(err)
	}
	fmt.Println(h.CipherID, h.ChunkSize, h.KDF == nil)
	ciphers := map[string]envelope.Cipher{c.ID(): c}
	err = ciphers[h.CipherID].Decrypt(ctx, io.Discard, io.MultiReader(bytes.NewReader(raw), src))
	fmt.Println(err)
	// Output:
	// aes-256-gcm-v1 1024 true
	// <nil>
}
