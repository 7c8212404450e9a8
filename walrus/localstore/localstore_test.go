package localstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/storetest"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Suite{New: func(t *testing.T) walrus.Store { return newStore(t) }})
}

func TestLayoutKnownAnswer(t *testing.T) {
	s := newStore(t)
	stored, err := s.Put(context.Background(), bytes.NewReader([]byte("hello")), 5, walrus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// sha256("hello") = 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
	if want := walrus.BlobID("LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ"); stored.BlobID != want {
		t.Fatalf("id %s, want %s", stored.BlobID, want)
	}
	if stored.EndEpoch != 0 || stored.ObjectID != "" || stored.Parts != 0 || stored.Size != 5 {
		t.Fatalf("unexpected Stored %+v", stored)
	}
	p := filepath.Join(s.Dir(), "2c", "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "hello" {
		t.Fatalf("blob file %s: %q, %v", p, b, err)
	}
	if IDOf([]byte("hello")) != stored.BlobID {
		t.Fatal("IDOf disagrees with Put")
	}
	ents, err := os.ReadDir(filepath.Join(s.Dir(), tmpDirName))
	if err != nil || len(ents) != 0 {
		t.Fatalf("temporary files left behind: %v %v", ents, err)
	}
}

func TestCorruptBlobDetected(t *testing.T) {
	s := newStore(t)
	content := storetest.Content(1, 200_000)
	stored, err := s.Put(context.Background(), bytes.NewReader(content), int64(len(content)), walrus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(content)
	p := s.path(digest)
	os.Chmod(p, 0o600)
	bad := bytes.Clone(content)
	bad[123_456] ^= 1
	if err := os.WriteFile(p, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = storetest.ReadAll(context.Background(), s, stored.BlobID)
	var ce *walrus.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, walrus.ErrCorrupt) {
		t.Fatalf("read of a tampered blob: %v, want *CorruptError", err)
	}
	if ce.ID != stored.BlobID || ce.Want != hex.EncodeToString(digest[:]) {
		t.Fatalf("CorruptError names %s want %s", ce.ID, ce.Want)
	}
	if err := s.Verify(context.Background(), stored.BlobID); !errors.Is(err, walrus.ErrCorrupt) {
		t.Fatalf("Verify: %v", err)
	}
	// Truncation is corruption too.
	if err := os.WriteFile(p, content[:1000], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(context.Background(), stored.BlobID); !errors.Is(err, walrus.ErrCorrupt) {
		t.Fatalf("Verify of a truncated blob: %v", err)
	}
	// Putting the content again repairs the blob.
	again, err := s.Put(context.Background(), bytes.NewReader(content), int64(len(content)), walrus.StoreOptions{})
	if err != nil || !again.AlreadyCertified || again.BlobID != stored.BlobID {
		t.Fatalf("re-put: %+v %v", again, err)
	}
	if err := s.Verify(context.Background(), stored.BlobID); err != nil {
		t.Fatalf("Verify after re-put: %v", err)
	}
}

func TestFailedPutLeavesNothing(t *testing.T) {
	s := newStore(t)
	_, err := s.Put(context.Background(), io.MultiReader(bytes.NewReader([]byte("abc")), errReader{}), -1, walrus.StoreOptions{})
	if err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if _, err := s.Put(context.Background(), bytes.NewReader([]byte("abc")), 4, walrus.StoreOptions{}); !errors.Is(err, walrus.ErrSizeMismatch) {
		t.Fatal(err)
	}
	if ok, err := s.Has(context.Background(), IDOf([]byte("abc"))); ok || err != nil {
		t.Fatalf("Has after failed puts = %v, %v", ok, err)
	}
	ents, _ := os.ReadDir(s.Dir())
	for _, e := range ents {
		if e.Name() != tmpDirName {
			t.Errorf("unexpected entry %s after failed puts", e.Name())
		}
	}
	tmps, _ := os.ReadDir(filepath.Join(s.Dir(), tmpDirName))
	if len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestOpenErrors(t *testing.T) {
	if _, err := Open(""); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := Open(f); err == nil {
		t.Fatal("Open of a regular file succeeded")
	}
}

func BenchmarkPut1MiB(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	content := storetest.Content(1, 1<<20)
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		content[0], content[1], content[2] = byte(i), byte(i>>8), byte(i>>16)
		if _, err := s.Put(context.Background(), bytes.NewReader(content), int64(len(content)), walrus.StoreOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet1MiB(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	content := storetest.Content(1, 1<<20)
	stored, err := s.Put(context.Background(), bytes.NewReader(content), int64(len(content)), walrus.StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Verify(context.Background(), stored.BlobID); err != nil {
			b.Fatal(err)
		}
	}
}
