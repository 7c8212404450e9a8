package history

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/walrus"
)

// Shipper pushes and restores histories.
type Shipper struct {
	Repo    *repo.Repo
	Cipher  envelope.Cipher
	Blobs   walrus.Store
	Pointer Pointer
	Options walrus.StoreOptions
	// MaxPack bounds what one pack's CAR counts against a reader's memory
	// (CARStats.Staged: its bytes and a per-block overhead; default
	// snapshot.DefaultCARMaxStaged, what a reader holds while it checks a
	// pack): a push whose new history is larger goes out in
	// several packs, and one with a single commit that alone is larger is
	// refused before anything is uploaded, rather than publishing a
	// history no reader takes.
	MaxPack int64
	// RecordKeys: a push names in the manifest the keys the store trusts
	// to verify the agent's receipts; a restore records the manifest's
	// signer as trusted for the agent (it may sign the agent's next
	// history) and those keys as learned with the agent's receipts (they
	// verify them and sign nothing; dag/repo/trust.go). False leaves keys
	// out of both.
	RecordKeys bool
}

// getBlob reads a blob, checking its sha256 and size, at most size bytes.
func (s *Shipper) getBlob(ctx context.Context, id walrus.BlobID, sum string, size int64) ([]byte, error) {
	rc, err := s.Blobs.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, size+1))
	if err != nil {
		return nil, err
	}
	got := sha256.Sum256(data)
	if int64(len(data)) != size || hex.EncodeToString(got[:]) != sum {
		return nil, fmt.Errorf("%w: blob %s is %d bytes with sha256 %x, the manifest says %d bytes, %s", ErrBadPack, id, len(data), got, size, sum)
	}
	return data, nil
}

// sealedBound is the largest sealed blob whose plaintext can be n bytes
// (the envelope's headers and tags, generously).
func sealedBound(n int64) int64 { return n + n/16 + 1<<20 }

// getSealed reads a sealed blob (getBlob) and decrypts it.
func (s *Shipper) getSealed(ctx context.Context, id walrus.BlobID, sum string, size int64) ([]byte, error) {
	blob, err := s.getBlob(ctx, id, sum, size)
	if err != nil {
		return nil, err
	}
	var plain bytes.Buffer
	if err := s.Cipher.Decrypt(ctx, &plain, bytes.NewReader(blob)); err != nil {
		return nil, err
	}
	return plain.Bytes(), nil
}

func (s *Shipper) putBlob(ctx context.Context, data []byte) (walrus.BlobID, string, error) {
	st, err := s.Blobs.Put(ctx, bytes.NewReader(data), int64(len(data)), s.Options)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(data)
	return st.BlobID, hex.EncodeToString(sum[:]), nil
}

// putSealed seals plain with the cipher and stores it.
func (s *Shipper) putSealed(ctx context.Context, plain []byte) (walrus.BlobID, string, int64, error) {
	var sealed bytes.Buffer
	if err := s.Cipher.Encrypt(ctx, &sealed, bytes.NewReader(plain), sha256.Sum256(plain)); err != nil {
		return "", "", 0, err
	}
	id, sum, err := s.putBlob(ctx, sealed.Bytes())
	return id, sum, int64(sealed.Len()), err
}

// Published returns the agent's current manifest, verified against trusted.
func (s *Shipper) Published(ctx context.Context, agent string, trusted []ed25519.PublicKey) (*Manifest, Ref, error) {
	ref, err := s.Pointer.ReadHistory(ctx, agent)
	if err != nil {
		return nil, ref, err
	}
	data, err := s.getBlob(ctx, ref.Blob, ref.SHA256, ref.Size)
	if err != nil {
		return nil, ref, fmt.Errorf("history manifest: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, ref, err
	}
	if err := m.Verify(trusted); err != nil {
		return nil, ref, err
	}
	if m.Agent != agent {
		return nil, ref, fmt.Errorf("%w: the manifest is agent %q's, not %q's", ErrBadManifest, m.Agent, agent)
	}
	return m, ref, nil
}

// ndjson joins tape lines, each with its newline.
func ndjson(lines [][]byte) []byte {
	var b []byte
	for _, l := range lines {
		b = append(append(b, l...), '\n')
	}
	return b
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
