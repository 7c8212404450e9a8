package repo_test

import (
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// The task record's bytes (docs/format.md, "Task records"): a landing of
// task t-1, attempt 2, whole, over two commits writing two keys.
func TestTaskRecordVector(t *testing.T) {
	rec := repo.TaskRecord{Kind: repo.TaskRecordLanding, Flags: repo.TaskRecordWhole,
		ID: "t-1", Attempt: "2", Model: "m", Adapter: "", Time: 1700000000,
		Start:      objects.Sum(objects.CodecDagCBOR, []byte("start")),
		Commit:     objects.Sum(objects.CodecDagCBOR, []byte("commit")),
		TaskCommit: objects.Sum(objects.CodecDagCBOR, []byte("commit")),
		Commits:    2, Keys: []string{"a.md", "b"}}
	h, _ := objects.NewBundleHasher().Sum()
	rec.BundleBefore, rec.BundleAfter = h, h
	rec.BundleAfter[0] = 0
	enc := repo.EncodeTaskRecord(rec)
	got := hex.EncodeToString(enc)
	const want = "01010103742d310132016d0080c49fd50c2401711220cced28c6dc3f99c2396a5eaad732bf6b28142335892b1cd0e6af6cdb53f5ccfa24017112209505cacb7c710ed17125fcc6cb3669e8ddca6c8cd8af6a31f6b3cd64604c309824017112209505cacb7c710ed17125fcc6cb3669e8ddca6c8cd8af6a31f6b3cd64604c3098c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a47000d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470020204612e6d640162abedbe85"
	if got != want {
		t.Fatalf("record:\n%s\nwant\n%s", got, want)
	}
	if n := repo.TaskRecordName("lumen", 10); n != "taskrec/lumen/000000000000000a" {
		t.Fatalf("name of line 10: %s", n)
	}
	dec, err := repo.DecodeTaskRecord(enc)
	if err != nil || !reflect.DeepEqual(dec, rec) {
		t.Fatalf("decoded %+v, %v", dec, err)
	}
	none := repo.EncodeTaskRecord(repo.TaskRecord{Kind: repo.TaskRecordNone})
	if hex.EncodeToString(none) != "0100e2c3efa5" {
		t.Fatalf("record of no task: %x", none)
	}
	absent := repo.EncodeTaskRecord(repo.TaskRecord{Kind: repo.TaskRecordAbsent, Commit: rec.Commit, TaskCommit: rec.Start})
	const wantAbsent = "0102" + "2401711220" + "9505cacb7c710ed17125fcc6cb3669e8ddca6c8cd8af6a31f6b3cd64604c3098" +
		"2401711220" + "cced28c6dc3f99c2396a5eaad732bf6b28142335892b1cd0e6af6cdb53f5ccfa"
	if got := hex.EncodeToString(absent); got[:len(got)-8] != wantAbsent || got[len(got)-8:] != "d02ff9a2" {
		t.Fatalf("record of absent commits: %s", got)
	}
	if dec, err := repo.DecodeTaskRecord(absent); err != nil || dec.Kind != repo.TaskRecordAbsent || dec.Commit != rec.Commit || dec.TaskCommit != rec.Start {
		t.Fatalf("decoded %+v, %v", dec, err)
	}
	// Every truncation and every flipped bit is refused, never a panic.
	for _, enc := range [][]byte{enc, none, absent} {
		for i := range enc {
			if _, err := repo.DecodeTaskRecord(enc[:i]); !errors.Is(err, repo.ErrBadTaskRecord) {
				t.Fatalf("truncated to %d: %v", i, err)
			}
			for bit := range 8 {
				bad := append([]byte(nil), enc...)
				bad[i] ^= 1 << bit
				if _, err := repo.DecodeTaskRecord(bad); !errors.Is(err, repo.ErrBadTaskRecord) {
					t.Fatalf("bit %d of byte %d flipped: %v", bit, i, err)
				}
			}
		}
	}
}

// Hostile bytes are ErrBadTaskRecord, never a panic; what decodes
// encodes to bytes that decode to the same record.
func FuzzDecodeTaskRecord(f *testing.F) {
	c := objects.Sum(objects.CodecDagCBOR, []byte("commit"))
	f.Add(repo.EncodeTaskRecord(repo.TaskRecord{Kind: repo.TaskRecordLanding, Flags: repo.TaskRecordWhole, ID: "t", Commit: c, TaskCommit: c, Keys: []string{"k"}}))
	f.Add(repo.EncodeTaskRecord(repo.TaskRecord{Kind: repo.TaskRecordNone}))
	f.Add(repo.EncodeTaskRecord(repo.TaskRecord{Kind: repo.TaskRecordAbsent, Commit: c, TaskCommit: c}))
	f.Add([]byte("not a record"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := repo.DecodeTaskRecord(b)
		if err != nil {
			if !errors.Is(err, repo.ErrBadTaskRecord) {
				t.Fatalf("error %v is not ErrBadTaskRecord", err)
			}
			return
		}
		again, err := repo.DecodeTaskRecord(repo.EncodeTaskRecord(rec))
		if err != nil || !reflect.DeepEqual(again, rec) {
			t.Fatalf("decoded %+v; encoded and decoded again %+v, %v", rec, again, err)
		}
	})
}
