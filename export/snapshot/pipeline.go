package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/internal/repo"
	"github.com/agentstate/agentstate/internal/tape"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/walrus"
)

// Pipeline ships commits out and restores them.
type Pipeline struct {
	Repo    *repo.Repo
	Cipher  envelope.Cipher
	Blobs   walrus.Store
	Pointer Pointer // nil: push does not publish, restore needs a blob id
	Options walrus.StoreOptions
	// TempDir holds the staged tar and ciphertext ("" = os.TempDir()).
	TempDir string
}

// Record is one push or restore.
type Record struct {
	Op               string        `json:"op"` // "push" or "restore"
	Agent            string        `json:"agent"`
	Commit           objects.CID   `json:"commit"`
	Tree             objects.CID   `json:"tree"`
	BundleHash       string        `json:"bundleHash"`
	BlobID           walrus.BlobID `json:"blobId"`
	EndEpoch         int64         `json:"endEpoch,omitempty"`
	Size             int64         `json:"size"`
	Parts            int           `json:"parts,omitempty"`
	AlreadyCertified bool          `json:"alreadyCertified,omitempty"`
	Pointer          string        `json:"pointer,omitempty"`
	Receipts         int           `json:"receipts,omitempty"` // restore: receipts re-ingested
	Time             int64         `json:"time"`
	Error            string        `json:"error,omitempty"` // a failed push: what went wrong
}

func (p *Pipeline) temp(pattern string) (*os.File, error) {
	f, err := os.CreateTemp(p.TempDir, pattern)
	if err != nil {
		return nil, fmt.Errorf("snapshot: staging file: %w", err)
	}
	return f, nil
}

func removeTemp(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}

// Push exports commit as the agent's snapshot: the deterministic tar with the
// agent's receipt tape, encrypted, stored as a blob, and published through the
// pointer. Memory stays bounded: the tar and ciphertext are staged in files.
func (p *Pipeline) Push(ctx context.Context, agent string, commit objects.CID) (rec Record, err error) {
	rec = Record{Op: "push", Agent: agent, Commit: commit, Time: time.Now().Unix()}
	defer func() {
		if err != nil && refs.ValidateAgent(agent) == nil {
			// Failed pushes are kept too, so 'agentstate snapshots' shows them.
			failed := rec
			failed.Error = err.Error()
			_ = p.record(failed)
		}
	}()
	if pf, ok := p.Pointer.(Preflighter); ok {
		if err := pf.Preflight(ctx, agent); err != nil {
			return rec, fmt.Errorf("snapshot: the pointer for %q cannot be updated, so nothing was uploaded: %w", agent, err)
		}
	}
	cm, err := p.Repo.Commit(ctx, commit)
	if err != nil {
		return rec, err
	}
	rec.Tree = cm.Tree
	h, err := p.Repo.BundleHash(ctx, cm.Tree)
	if err != nil {
		return rec, err
	}
	rec.BundleHash = h.String()
	receipts, err := tape.New(p.Repo.Store).NDJSON(ctx, agent)
	if err != nil {
		return rec, err
	}
	plain, err := p.temp("agentstate-tar-*")
	if err != nil {
		return rec, err
	}
	defer removeTemp(plain)
	sum := sha256.New()
	if _, err := WriteTar(ctx, io.MultiWriter(plain, sum), p.Repo.Blocks, cm.Tree, h, receipts); err != nil {
		return rec, err
	}
	var digest [32]byte
	copy(digest[:], sum.Sum(nil))
	if _, err := plain.Seek(0, io.SeekStart); err != nil {
		return rec, err
	}
	sealed, err := p.temp("agentstate-blob-*")
	if err != nil {
		return rec, err
	}
	defer removeTemp(sealed)
	if err := p.Cipher.Encrypt(ctx, sealed, plain, digest); err != nil {
		return rec, fmt.Errorf("snapshot: encrypting: %w", err)
	}
	size, err := sealed.Seek(0, io.SeekCurrent)
	if err != nil {
		return rec, err
	}
	if _, err := sealed.Seek(0, io.SeekStart); err != nil {
		return rec, err
	}
	st, err := p.Blobs.Put(ctx, sealed, size, p.Options)
	if err != nil {
		return rec, fmt.Errorf("snapshot: storing blob: %w", err)
	}
	rec.BlobID, rec.EndEpoch, rec.Size, rec.Parts, rec.AlreadyCertified = st.BlobID, st.EndEpoch, size, st.Parts, st.AlreadyCertified
	if p.Pointer != nil {
		if err := p.Pointer.Write(ctx, agent, st.BlobID); err != nil {
			return rec, fmt.Errorf("snapshot: blob %s stored but the pointer was not updated: %w", st.BlobID, err)
		}
		rec.Pointer = p.Pointer.Where(agent)
	}
	return rec, p.record(rec)
}

// RestoreOptions tune Restore.
type RestoreOptions struct {
	BlobID walrus.BlobID       // restore this blob instead of the pointer's
	Expect *objects.BundleHash // refuse unless the content hashes to this
	// Progress, if set, is called as ciphertext arrives with the bytes read so
	// far (total is -1: the blob's size is not known in advance).
	Progress func(done, total int64)
}

// Restore fetches an agent's snapshot (the pointer's, or opts.BlobID),
// decrypts it into a staging file, imports it as a tree, checks the lineage
// it claims, commits it to the agent (op restore; a new root commit when the
// agent does not exist) and re-ingests its receipts. Nothing moves unless
// every check passes.
func (p *Pipeline) Restore(ctx context.Context, agent string, opts RestoreOptions) (Record, error) {
	rec := Record{Op: "restore", Agent: agent, Time: time.Now().Unix()}
	if err := refs.ValidateAgent(agent); err != nil {
		return rec, err
	}
	id := opts.BlobID
	if id == "" {
		if p.Pointer == nil {
			return rec, fmt.Errorf("%w: no pointer configured; give a blob id", ErrNoPointer)
		}
		var err error
		if id, err = p.Pointer.Read(ctx, agent); err != nil {
			return rec, err
		}
		rec.Pointer = p.Pointer.Where(agent)
	}
	rec.BlobID = id
	body, err := p.Blobs.Get(ctx, id)
	if err != nil {
		return rec, fmt.Errorf("snapshot: fetching blob %s: %w", id, err)
	}
	plain, err := p.temp("agentstate-restore-*")
	if err != nil {
		body.Close()
		return rec, err
	}
	defer removeTemp(plain)
	counter := &countingReader{r: body, progress: opts.Progress}
	err = p.Cipher.Decrypt(ctx, plain, counter)
	body.Close()
	if err != nil {
		return rec, fmt.Errorf("snapshot: blob %s: %w", id, err)
	}
	rec.Size = counter.n
	if _, err := plain.Seek(0, io.SeekStart); err != nil {
		return rec, err
	}
	imp, err := ReadTar(ctx, plain, p.Repo.Blocks, false)
	if err != nil {
		return rec, fmt.Errorf("snapshot: blob %s: %w", id, err)
	}
	rec.Tree, rec.BundleHash = imp.Tree, imp.Bundle.String()
	if err := imp.CheckLineage(opts.Expect); err != nil {
		return rec, fmt.Errorf("snapshot: refusing blob %s: %w", id, err)
	}
	head, hc, err := p.Repo.HeadCommit(ctx, agent)
	if err != nil {
		return rec, err
	}
	if hc != nil && hc.Tree == imp.Tree {
		rec.Commit = head
	} else {
		c, _, err := p.Repo.CommitTree(ctx, repo.CommitRequest{Agent: agent, Tree: imp.Tree, Parent: head, Fresh: head.IsZero(),
			Op: refs.OpRestore, Message: "restore snapshot " + string(id), Metadata: map[string]string{"restoredFrom": string(id)}})
		if err != nil {
			return rec, err
		}
		rec.Commit = c
	}
	if len(imp.Receipts) > 0 {
		n, err := tape.New(p.Repo.Store).Import(ctx, agent, imp.Receipts)
		if err != nil {
			return rec, fmt.Errorf("snapshot: re-ingesting receipts: %w", err)
		}
		rec.Receipts = n
	}
	return rec, p.record(rec)
}

type countingReader struct {
	r        io.Reader
	n        int64
	progress func(done, total int64)
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	if c.progress != nil && n > 0 {
		c.progress(c.n, -1)
	}
	return n, err
}

const recordPrefix = "snapshots/"

func (p *Pipeline) record(rec Record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	key := fmt.Sprintf("%s%s/%020d-%s", recordPrefix, rec.Agent, time.Now().UnixNano(), rec.Op)
	return p.Repo.Store.SetMeta(key, data)
}

// Records returns an agent's push and restore records, oldest first ("" = all agents).
func Records(r *repo.Repo, agent string) ([]Record, error) {
	prefix := recordPrefix
	if agent != "" {
		prefix += agent + "/"
	}
	var out []Record
	err := r.Store.MetaPrefix(prefix, func(key string, v []byte) error {
		var rec Record
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("snapshot: record %s: %w", key, err)
		}
		out = append(out, rec)
		return nil
	})
	return out, err
}
