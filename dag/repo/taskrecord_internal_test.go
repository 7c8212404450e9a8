package repo

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/refs/receipt"
)

// A task record prepared for a receipt line (as the runtime does while a
// landing waits for the disk) is what the append of exactly that line
// writes, and it is not computed again; an append of other bytes computes
// its own. Both equal what TaskRecordOf computes.
func TestPreparedTaskRecordIsWrittenWithItsLine(t *testing.T) {
	ctx := context.Background()
	r, err := Init(filepath.Join(t.TempDir(), "s"), Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tree, err := r.EmptyTree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seed := [32]byte{7}
	key := ed25519.NewKeyFromSeed(seed[:])
	line := func(task string) []byte {
		id, _, err := r.WriteCommit(Deferred(ctx), CommitSpec{Tree: tree, Message: "put " + task,
			Metadata: map[string]string{"agent": "a", "task": task, "op": "put", "key": task + ".md"}})
		if err != nil {
			t.Fatal(err)
		}
		rc := &receipt.Receipt{Agent: "a", Task: task, Commit: id, TaskCommit: id, Writes: 1, Time: 1700000000}
		rc.Sign(key)
		return rc.Line()
	}
	want := func(l []byte) []byte {
		tr, err := r.TaskRecordOf(ctx, "a", l)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Kind != TaskRecordLanding || len(tr.Keys) != 1 {
			t.Fatalf("record %+v, want a landing of one key", tr)
		}
		return EncodeTaskRecord(tr)
	}
	stored := func(n uint64) []byte {
		v, ok, err := r.Storage.GetMeta(ctx, TaskRecordName("a", n))
		if err != nil || !ok {
			t.Fatalf("record of line %d: %v, %v", n, ok, err)
		}
		return v
	}

	l1 := line("t1")
	before := taskRecordsComputed.Load()
	r.PrepareTaskRecord(ctx, "a", l1)
	if _, err := r.Tape.Append(Deferred(ctx), "a", l1); err != nil {
		t.Fatal(err)
	}
	if n := taskRecordsComputed.Load() - before; n != 1 {
		t.Fatalf("prepared and appended: %d records computed, want 1 (the prepared one)", n)
	}
	if got := stored(1); !bytes.Equal(got, want(l1)) {
		t.Fatalf("prepared record written %x, want %x", got, want(l1))
	}

	l2, l3 := line("t2"), line("t3")
	r.PrepareTaskRecord(ctx, "a", l2)
	before = taskRecordsComputed.Load()
	if _, err := r.Tape.Append(Deferred(ctx), "a", l3); err != nil {
		t.Fatal(err)
	}
	if n := taskRecordsComputed.Load() - before; n != 1 {
		t.Fatalf("a line other than the prepared one: %d records computed, want 1", n)
	}
	if got := stored(2); !bytes.Equal(got, want(l3)) {
		t.Fatalf("record of an unprepared line %x, want %x", got, want(l3))
	}
}
