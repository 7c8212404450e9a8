package webui_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/internal/webui"
	"github.com/agentstate/agentstate/objects"
)

// holdStore holds back one block until released (or 10 s), and can return
// another with a byte changed after its hash was checked.
type holdStore struct {
	objects.BlockStore
	hold    objects.CID
	release chan struct{}
	lie     objects.CID
}

func (s *holdStore) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if c == s.hold {
		select {
		case <-s.release:
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("block %s was asked for before the download began", c)
		}
	}
	data, err := s.BlockStore.Get(ctx, c)
	if err == nil && c == s.lie {
		data = append([]byte(nil), data...)
		data[0] ^= 1
	}
	return data, err
}

func rawFixture(t *testing.T, content []byte) (*holdStore, string) {
	t.Helper()
	ctx := context.Background()
	r := repo.New(memory.New())
	v, blocks := objects.NewFileValue(content)
	if _, err := r.Edit(ctx, repo.EditRequest{Agent: "lumen", Message: "big", Create: true, Blocks: blocks,
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, "big.bin", v) }}); err != nil {
		t.Fatal(err)
	}
	hs := &holdStore{BlockStore: r.Blocks, release: make(chan struct{})}
	r.Blocks = hs
	srv := httptest.NewServer(webui.Handler(inspect.New(r), webui.Options{}))
	t.Cleanup(srv.Close)
	return hs, srv.URL + "/api/raw?agent=lumen&rev=HEAD&key=big.bin"
}

// lastChunk is the raw chunk that ends content's value.
func lastChunk(content []byte) objects.CID {
	_, blocks := objects.NewFileValue(content)
	var last objects.CID
	for _, b := range blocks {
		if b.CID.Codec() == objects.CodecRaw {
			last = b.CID
		}
	}
	return last
}

// A download streams: its first bytes reach the client before the value's
// last chunk is read, so the server holds a chunk at a time, not the value.
func TestRawStreams(t *testing.T) {
	content := make([]byte, 6<<20)
	rand.NewChaCha8(sha256.Sum256([]byte("raw"))).Read(content)
	hs, url := rawFixture(t, content)
	hs.hold = lastChunk(content)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(content)) {
		t.Fatalf("status %d, length %d", resp.StatusCode, resp.ContentLength)
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	close(hs.release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(append(first, rest...), content) {
		t.Fatalf("download: %d bytes, %v", 1+len(rest), err)
	}
}

// A value whose content does not match its file node never downloads
// whole: the response ends short of its length.
func TestRawCutOnBadContent(t *testing.T) {
	content := make([]byte, 3<<20)
	rand.NewChaCha8(sha256.Sum256([]byte("raw bad"))).Read(content)
	hs, url := rawFixture(t, content)
	close(hs.release)
	hs.lie = lastChunk(content)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 && (err == nil || len(got) >= len(content)) {
		t.Fatalf("download of a value with a changed chunk: %d of %d bytes, error %v", len(got), len(content), err)
	}
}
