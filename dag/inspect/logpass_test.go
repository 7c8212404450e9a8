package inspect_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// recordLookups is a store that counts the commit-graph records looked up
// one by one (GetMeta); a pass over them (MetaFrom) is not counted.
type recordLookups struct {
	*badger.Store
	n atomic.Int64
}

func (s *recordLookups) GetMeta(ctx context.Context, name string) ([]byte, bool, error) {
	if strings.HasPrefix(name, dag.GraphRecordPrefix) {
		s.n.Add(1)
	}
	return s.Store.GetMeta(ctx, name)
}

// A whole log reads the commit graph in one pass from its first commit:
// no record is looked up by itself (each lookup decompressed a block the
// pass then read again); a short one (-n 3) looks up its few (and the
// next commit's) and starts no pass. Both print what the commit objects say.
func TestWholeLogReadsGraphInPasses(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	w, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const commits = 60
	for i := range commits {
		tr := objects.NewTree(w.Blocks)
		v := objects.NewValue([]byte(fmt.Sprint("v", i)))
		if err := w.Blocks.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Put(ctx, "k", v.CID); err != nil {
			t.Fatal(err)
		}
		root, err := tr.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := w.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: root, Message: fmt.Sprint("c", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	logOf := func(limit int) ([]string, int64) {
		s, err := badger.Open(dir, badger.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		st := &recordLookups{Store: s}
		r := repo.New(st)
		defer r.Close()
		var got []string
		_, err = inspect.New(r).LogEach(ctx, "a", inspect.LogOptions{Limit: limit, NoBundleHash: true}, func(c inspect.Commit, _ *inspect.History) error {
			got = append(got, c.Message)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, st.n.Load()
	}
	whole, lookups := logOf(0)
	if len(whole) != commits || whole[0] != fmt.Sprint("c", commits-1) || whole[commits-1] != "c0" {
		t.Fatalf("log of %d commits: %d lines, %q", commits, len(whole), whole)
	}
	if lookups != 0 {
		t.Errorf("a whole log looked up %d graph records one by one, want 0 (one pass)", lookups)
	}
	short, lookups := logOf(3)
	if strings.Join(short, " ") != strings.Join(whole[:3], " ") {
		t.Errorf("log -n 3: %q, want %q", short, whole[:3])
	}
	if lookups == 0 || lookups > 4 {
		t.Errorf("log -n 3 looked up %d graph records, want 1 to 4 (the walk reads a commit's parents before it gives the commit)", lookups)
	}
}
