package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
	"github.com/agentstate/agentstate/walrus"
)

// Pipeline ships commits out and restores them.
type Pipeline struct {
	Repo    *repo.Repo
	Cipher  envelope.Cipher
	Blobs   walrus.Store
	Pointer Pointer // nil: push does not publish, restore needs a blob id
	Options walrus.StoreOptions
	// TempDir holds the staged tar, ciphertext and restored plaintext. ""
	// means <Repo.Dir>/tmp (mode 0700; files 0600), or os.TempDir() for a
	// store without a directory. Push and Restore first remove what pushes
	// and restores killed before this process started left in <Repo.Dir>/tmp.
	TempDir string
}

// StagingDirName is the directory inside the store where Push and Restore
// stage plaintext and ciphertext.
const StagingDirName = "tmp"

// stagingPattern is the name prefix of every staged file.
const stagingPattern = "agentstate-"

// processStart tells staged files of this process from those of killed ones.
var processStart = time.Now()

// Record is one push or restore.
type Record struct {
	Op               string        `json:"op"` // "push" or "restore"
	Agent            string        `json:"agent"`
	Commit           objects.CID   `json:"commit"`
	Tree             objects.CID   `json:"tree"`
	BundleHash       string        `json:"bundleHash"`
	BlobID           walrus.BlobID `json:"blobId"`
	BlobSHA256       string        `json:"blobSha256,omitempty"` // sha256 of the blob's bytes, as bound by the pointer
	EndEpoch         int64         `json:"endEpoch,omitempty"`
	Size             int64         `json:"size"`
	Parts            int           `json:"parts,omitempty"`
	AlreadyCertified bool          `json:"alreadyCertified,omitempty"`
	Pointer          string        `json:"pointer,omitempty"`
	Receipts         int           `json:"receipts,omitempty"` // restore: receipts re-ingested
	Time             int64         `json:"time"`
	Error            string        `json:"error,omitempty"` // a failed push: what went wrong
}

// stagingDir returns (creating it) the directory staged files go to, and
// whether it is the store's own, which this pipeline cleans.
func (p *Pipeline) stagingDir() (dir string, own bool, err error) {
	switch {
	case p.TempDir != "":
		return p.TempDir, false, nil
	case p.Repo == nil || p.Repo.Dir == "":
		return os.TempDir(), false, nil
	}
	dir = filepath.Join(p.Repo.Dir, StagingDirName)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("snapshot: staging directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("snapshot: staging directory: %w", err)
	}
	return dir, true, nil
}

// cleanStaging removes the staged files that pushes and restores left in the
// store's staging directory when they were killed: every staged file last
// modified before this process started. The caller holds the store open,
// which Badger allows one process at a time, so no other process is using
// them; this process's own (concurrent) pushes are younger and stay.
func (p *Pipeline) cleanStaging() error {
	dir, own, err := p.stagingDir()
	if err != nil || !own {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("snapshot: staging directory: %w", err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), stagingPattern) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(processStart) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("snapshot: removing %s left by an interrupted push or restore: %w", e.Name(), err)
			}
		}
	}
	return nil
}

func (p *Pipeline) temp(pattern string) (*os.File, error) {
	dir, _, err := p.stagingDir()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, stagingPattern+pattern) // mode 0600
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
			_ = p.record(context.WithoutCancel(ctx), failed)
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
	receipts, err := p.Repo.Tape.NDJSON(ctx, agent)
	if err != nil {
		return rec, err
	}
	if err := p.cleanStaging(); err != nil {
		return rec, err
	}
	plain, err := p.temp("tar-*")
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
	sealed, err := p.temp("blob-*")
	if err != nil {
		return rec, err
	}
	defer removeTemp(sealed)
	blobSum := sha256.New()
	if err := p.Cipher.Encrypt(ctx, io.MultiWriter(sealed, blobSum), plain, digest); err != nil {
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
	b := Binding{Blob: st.BlobID, Size: size, Commit: commit, Tree: cm.Tree, Bundle: h}
	blobSum.Sum(b.SHA256[:0])
	rec.BlobSHA256 = hex.EncodeToString(b.SHA256[:])
	if p.Pointer != nil {
		if err := p.Pointer.Write(ctx, agent, b); err != nil {
			return rec, fmt.Errorf("snapshot: blob %s stored but the pointer was not updated: %w", st.BlobID, err)
		}
		rec.Pointer = p.Pointer.Where(agent)
	}
	return rec, p.record(ctx, rec)
}

// RestoreOptions tune Restore.
type RestoreOptions struct {
	// BlobID restores this blob instead of the pointer's. The pointer is
	// then not read, so only the lineage inside the snapshot (and Expect)
	// is checked: the caller vouches for the id.
	BlobID walrus.BlobID
	Expect *objects.BundleHash // refuse unless the content hashes to this
	// Progress, if set, is called as ciphertext arrives with the bytes read so
	// far (total is the bound size, or -1 when the size is not known).
	Progress func(done, total int64)
}

// Restore fetches an agent's snapshot (the pointer's, or opts.BlobID),
// checks it and makes it the agent's HEAD.
//
// With a pointer, the fetched bytes must have the sha256 and size its binding
// names (checked as they stream in, before anything is imported), and the
// snapshot's tree and bundle hash must be the binding's; a pointer without a
// binding is refused (*UnboundError). Then, in every case: the blob is
// decrypted into a staging file, its tar rebuilt as a tree, the lineage its
// bundle.lock.json claims checked, and receipts.ndjson parsed. Only when all
// of that passed does HEAD move (op restore; a new root commit when the agent
// does not exist) and the receipts join the tape. A failed restore moves no
// HEAD and logs no operation.
func (p *Pipeline) Restore(ctx context.Context, agent string, opts RestoreOptions) (rec Record, err error) {
	rec = Record{Op: "restore", Agent: agent, Time: time.Now().Unix()}
	if err := refs.ValidateAgent(agent); err != nil {
		return rec, err
	}
	var want *Binding
	id := opts.BlobID
	if id == "" {
		if p.Pointer == nil {
			return rec, fmt.Errorf("%w: no pointer configured; give a blob id", ErrNoPointer)
		}
		b, err := p.Pointer.Read(ctx, agent)
		if err != nil {
			return rec, err
		}
		want, id = &b, b.Blob
		rec.Pointer = p.Pointer.Where(agent)
		rec.BlobSHA256 = hex.EncodeToString(b.SHA256[:])
	}
	rec.BlobID = id
	if err := p.cleanStaging(); err != nil {
		return rec, err
	}
	body, err := p.Blobs.Get(ctx, id)
	if err != nil {
		return rec, fmt.Errorf("snapshot: fetching blob %s: %w", id, err)
	}
	plain, err := p.temp("restore-*")
	if err != nil {
		body.Close()
		return rec, err
	}
	defer removeTemp(plain)
	in := &boundReader{r: body, want: want, id: id, h: sha256.New(), progress: opts.Progress}
	err = p.Cipher.Decrypt(ctx, plain, in)
	if want != nil {
		// The whole blob must be read to check its hash, whether or not the
		// envelope needed it all; a mismatch explains a failed decryption
		// better than the decryption's own error.
		if verr := in.finish(); verr != nil && (err == nil || errors.Is(verr, ErrBindingMismatch)) {
			err = verr
		}
	}
	body.Close()
	if err != nil {
		if errors.Is(err, ErrBindingMismatch) {
			return rec, err
		}
		return rec, fmt.Errorf("snapshot: blob %s: %w", id, err)
	}
	rec.Size = in.n
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
	if want != nil {
		if err := p.checkBinding(ctx, *want, imp); err != nil {
			return rec, err
		}
	}
	receipts, err := tape.SplitNDJSON(imp.Receipts) // checked before anything moves
	if err != nil {
		return rec, fmt.Errorf("snapshot: refusing blob %s: %w", id, err)
	}

	// Everything checked: the one HEAD move, then the receipts.
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
	if len(receipts) > 0 {
		n, err := p.Repo.Tape.Import(ctx, agent, imp.Receipts)
		if err != nil {
			return rec, fmt.Errorf("snapshot: HEAD of %q restored to %s, but re-ingesting its receipts failed: %w", agent, rec.Commit.Short(), err)
		}
		rec.Receipts = n
	}
	return rec, p.record(ctx, rec)
}

// checkBinding checks an imported snapshot against the pointer's binding:
// the same bundle hash and tree, and, when this store holds the bound commit,
// that commit's tree.
func (p *Pipeline) checkBinding(ctx context.Context, b Binding, imp Imported) error {
	if imp.Bundle != b.Bundle {
		return &MismatchError{Blob: b.Blob, What: "bundle hash", Want: b.Bundle.String(), Got: imp.Bundle.String()}
	}
	if imp.Tree != b.Tree {
		return &MismatchError{Blob: b.Blob, What: "tree", Want: b.Tree.String(), Got: imp.Tree.String()}
	}
	if has, err := p.Repo.Blocks.Has(ctx, b.Commit); err == nil && has {
		cm, err := p.Repo.Commit(ctx, b.Commit)
		if err != nil {
			return fmt.Errorf("snapshot: reading commit %s named by the pointer: %w", b.Commit, err)
		}
		if cm.Tree != imp.Tree {
			return &MismatchError{Blob: b.Blob, What: "tree of commit " + b.Commit.String(), Want: cm.Tree.String(), Got: imp.Tree.String()}
		}
	}
	return nil
}

// boundReader counts and hashes the blob as it streams. With a binding, it
// refuses more bytes than the bound size at once, and at EOF returns a
// *MismatchError instead of io.EOF when the size or sha256 differ.
type boundReader struct {
	r        io.Reader
	want     *Binding
	id       walrus.BlobID
	h        hash.Hash
	n        int64
	progress func(done, total int64)
	err      error // sticky: io.EOF or a failure
}

func (b *boundReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.want != nil && int64(len(p)) > b.want.Size-b.n+1 {
		p = p[:b.want.Size-b.n+1] // never read much past the bound size
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	b.h.Write(p[:n])
	if b.progress != nil && n > 0 {
		total := int64(-1)
		if b.want != nil {
			total = b.want.Size
		}
		b.progress(b.n, total)
	}
	if b.want != nil && b.n > b.want.Size {
		b.err = &MismatchError{Blob: b.id, What: "size of the blob", Want: fmt.Sprintf("%d bytes", b.want.Size), Got: "more"}
		return 0, b.err
	}
	if err == io.EOF && b.want != nil {
		var got [32]byte
		b.h.Sum(got[:0])
		switch {
		case b.n != b.want.Size:
			b.err = &MismatchError{Blob: b.id, What: "size of the blob", Want: fmt.Sprintf("%d bytes", b.want.Size), Got: fmt.Sprintf("%d bytes", b.n)}
		case got != b.want.SHA256:
			b.err = &MismatchError{Blob: b.id, What: "sha256 of the blob", Want: hex.EncodeToString(b.want.SHA256[:]), Got: hex.EncodeToString(got[:])}
		default:
			b.err = io.EOF
		}
		return n, b.err
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

// finish reads what the consumer left (at most the bound size) and returns
// the verdict: nil when the blob matched, else why not.
func (b *boundReader) finish() error {
	if b.err == nil {
		_, _ = io.Copy(io.Discard, b)
	}
	if b.err == io.EOF {
		return nil
	}
	return b.err
}

const recordPrefix = "snapshots/"

func (p *Pipeline) record(ctx context.Context, rec Record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	key := fmt.Sprintf("%s%s/%020d-%s", recordPrefix, rec.Agent, time.Now().UnixNano(), rec.Op)
	return p.Repo.Storage.SetMeta(ctx, key, data)
}

// Records returns an agent's push and restore records, oldest first ("" = all
// agents). A record that does not decode is left out.
func Records(ctx context.Context, r *repo.Repo, agent string) ([]Record, error) {
	prefix := recordPrefix
	if agent != "" {
		prefix += agent + "/"
	}
	var out []Record
	err := r.Storage.MetaPrefix(ctx, prefix, func(key string, v []byte) error {
		var rec Record
		if err := json.Unmarshal(v, &rec); err != nil {
			return nil // damaged: it records nothing, and must not hide the others
		}
		out = append(out, rec)
		return nil
	})
	return out, err
}
