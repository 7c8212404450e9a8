package remote_test

import (
	"context"
	"crypto/ed25519"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/receipt"
)

// A receipt a client appends to a served store's tape gets its task
// record from the server, in the same write as the line: the server is
// the writer.
func TestTaskRecordsThroughServer(t *testing.T) {
	ctx := context.Background()
	local, _, c := served(t, remote.Options{})
	rr := repo.New(c)
	c1 := put(t, rr, "lumen", "a", "1")
	c2 := put(t, rr, "lumen", "b", "2")
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	var lines [][]byte
	for i, l := range [][2]objects.CID{{{}, c1}, {c1, c2}} {
		rc := &receipt.Receipt{Agent: "lumen", Task: "t", Attempt: string(rune('1' + i)), Model: "m", Parent: l[0], From: l[0],
			Commit: l[1], TaskCommit: l[1], Writes: 1, Time: 1700000000}
		rc.Sign(key)
		lines = append(lines, rc.Line())
	}
	lines = append(lines, []byte(`{"not":"a receipt"}`))
	if _, err := rr.Tape.Append(ctx, "lumen", lines...); err != nil {
		t.Fatal(err)
	}
	recs, ok, err := local.TaskRecords(ctx, "lumen")
	if err != nil || !ok || len(recs) != 3 {
		t.Fatalf("the server's records: %d, ok %v, %v", len(recs), ok, err)
	}
	if r := recs[1]; r.Kind != repo.TaskRecordLanding || r.Commit != c2 || r.Start != c1 || r.Commits != 1 || !r.Whole() ||
		!slices.Equal(r.Keys, []string{"b"}) || r.Attempt != "2" {
		t.Fatalf("record of line 2: %+v", r)
	}
	if recs[2].Kind != repo.TaskRecordNone {
		t.Fatalf("record of line 3: %+v", recs[2])
	}
	if rep, err := local.Verify(ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}
