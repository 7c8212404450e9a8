package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
)

// logFloorKeys writes the keys file of row 4h (badgerfloor @FILE): the
// Badger keys an unserved 'log --oneline' of agent reads, found by tracing
// every read the store makes during one (docs/performance.md, "Unserved log
// and the engine's start, again"): the format record, the agent's HEAD, the
// HEAD commit's block, the agent's checkpoint, the HEAD commit's graph
// index entry, then the commit graph's records, newest first, one per
// commit, in one scan from the first (the history's store holds this
// agent's commits only, so these are the records the log reads, in the
// log's order). Left
// out, so that the floor stays below the log: the HEAD records' scan the
// log makes for its decorations. The namespaces are
// dag/repo/storage/badger's: 'm' metadata, 'h' HEAD, 'b' blocks.
func logFloorKeys(ctx context.Context, store, agent, file string, commits int) error {
	rp, err := repo.Open(store, repo.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	h, err := rp.Refs.Head(ctx, agent)
	rp.Close()
	if err != nil {
		return err
	}
	var b strings.Builder
	line := func(k []byte) { b.WriteString(hex.EncodeToString(k) + "\n") }
	line([]byte("mformat"))
	line([]byte("h" + agent))
	line(append([]byte{'b'}, h.Commit.Bytes()...))
	line([]byte("mcheckpoint/" + agent))
	line([]byte("m" + dag.GraphIndexPrefix + h.Commit.String()))
	fmt.Fprintf(&b, "scan %s %d\n", hex.EncodeToString([]byte("m"+dag.GraphRecordPrefix)), commits)
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

// logBadgerFloor is row 4h: badgerfloor, a program linking only Badger,
// opening the store read-only with the store's options and reading the
// keys logFloorKeys lists, timed alternately with git log; then the log
// timed alternately with it. Every commit's record is read and a line
// printed per commit, nothing decoded or checked: a strict subset of what
// the log does, so a lower bound of any unserved log over this layout.
// It returns the row and the floor's ratio to git.
func logBadgerFloor(ctx context.Context, cfg *config, r *runner, h *history) (row, float64, error) {
	keyFile := filepath.Join(cfg.work, "hist", "log-keys.txt")
	if err := logFloorKeys(ctx, h.store, h.agent, keyFile, cfg.keyCommits); err != nil {
		return row{}, 0, err
	}
	bfloor, err := buildFloor(ctx, cfg, "badgerfloor")
	if err != nil {
		return row{}, 0, err
	}
	out, _, err := r.run(ctx, cfg.work, nil, bfloor, h.store, "@"+keyFile)
	if err != nil {
		return row{}, 0, err
	}
	if n := strings.Count(out, "\n"); n != cfg.keyCommits {
		return row{}, 0, fmt.Errorf("badgerfloor printed %d lines, want %d", n, cfg.keyCommits)
	}
	run := func(dir, name string, args ...string) timed {
		return func(int) (time.Duration, error) {
			_, d, err := r.run(ctx, dir, nil, name, args...)
			return d, err
		}
	}
	floor, git, err := pairN(cfg.reps, run(cfg.work, bfloor, h.store, "@"+keyFile), run(h.git, "git", "log", "--oneline"))
	if err != nil {
		return row{}, 0, err
	}
	logA, floorB, err := pairN(cfg.reps, run(cfg.work, cfg.bin, "--store", h.store, "--agent", h.agent, "log", "--oneline"), run(cfg.work, bfloor, h.store, "@"+keyFile))
	if err != nil {
		return row{}, 0, err
	}
	fr := float64(floor) / float64(git)
	return row{id: "4h", name: "  floor of 4: a program linking only Badger: start, read-only open, the keys the log reads, one line a commit, vs git log",
		as: fmtDur(floor), git: fmtDur(git), ratio: ratio(float64(floor), float64(git)),
		note: fmt.Sprintf("internal/cmd/bench/badgerfloor with the store's read-only options: 5 point reads (format, HEAD, the HEAD commit, checkpoint, graph index), then the %d commit-graph records in one iterator; timed alternately with it, log --oneline took %s against its %s (%s)",
			cfg.keyCommits, fmtDur(logA), fmtDur(floorB), ratio(float64(logA), float64(floorB)))}, fr, nil
}

// logFrontFloors are rows 4i and 4j, the floors of an unserved log as the
// front end runs one: a copy of the front end (cfg.bin) with a floor
// program installed beside it as the lean engine, so that 'agentstate log
// --oneline' is the front end's whole unserved path (its start, the store
// found, no server at its socket, the exec) and then the floor program,
// each timed alternately with git log. 4i's program is 4h's; 4j's is 4h's
// built with the tag checked, which checks each record it scans as every
// read must (docs/format.md: a block read is re-hashed before it is
// trusted; the message printed is decoded from the commit) and prints its
// message. It returns both rows and 4j's ratio to git.
func logFrontFloors(ctx context.Context, cfg *config, r *runner, h *history, keyFile string) ([]row, float64, error) {
	plain, err := buildFloor(ctx, cfg, "badgerfloor")
	if err != nil {
		return nil, 0, err
	}
	checked, err := buildFloorTags(ctx, cfg, "badgerfloor", "checked")
	if err != nil {
		return nil, 0, err
	}
	list, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, 0, err
	}
	checkFile := keyFile + ".check"
	if err := os.WriteFile(checkFile, append(list, "check\n"...), 0o644); err != nil {
		return nil, 0, err
	}
	var rows []row
	var last float64
	for _, f := range []struct{ id, name, engine, keys, note string }{
		{"4i", "  floor of 4 through the front end: the front end's unserved path, then 4h's program as the engine, vs git log", plain, keyFile,
			"what any unserved command pays before the engine's own start, plus 4h"},
		{"4j", "  floor of 4 with the reads' checks: 4i with each record checked as a read must and its message printed, vs git log", checked, checkFile,
			"each commit-graph record's checksum, its commit decoded and its CID computed (dag.DecodeGraphRecord, GraphRecord.Check), the first line of its message printed"},
	} {
		fr, err := logFrontFloor(ctx, cfg, r, h, f.id, f.engine, f.keys)
		if err != nil {
			return nil, 0, err
		}
		last = float64(fr.floor) / float64(fr.git)
		rows = append(rows, row{id: f.id, name: f.name, as: fmtDur(fr.floor), git: fmtDur(fr.git), ratio: ratio(float64(fr.floor), float64(fr.git)),
			note: "a copy of the front end with internal/cmd/bench/badgerfloor installed beside it as agentstate-engine-lean (BADGERFLOOR_ARGS gives it its arguments): " + f.note})
	}
	return rows, last, nil
}

type frontTimes struct{ floor, git time.Duration }

// logFrontFloor times one of logFrontFloors' rows: engine installed beside
// a copy of the front end, reading keys.
func logFrontFloor(ctx context.Context, cfg *config, r *runner, h *history, id, engine, keys string) (frontTimes, error) {
	front, err := frontWithEngine(filepath.Join(cfg.work, "hist", "front-floor-"+id), cfg.bin, engine)
	if err != nil {
		return frontTimes{}, err
	}
	env := []string{"BADGERFLOOR_ARGS=" + h.store + "\n@" + keys}
	args := []string{"--store", h.store, "--agent", h.agent, "log", "--oneline"}
	out, _, err := r.run(ctx, cfg.work, env, front, args...)
	if err != nil {
		return frontTimes{}, err
	}
	if n := strings.Count(out, "\n"); n != cfg.keyCommits {
		return frontTimes{}, fmt.Errorf("row %s: the front end with badgerfloor printed %d lines, want %d", id, n, cfg.keyCommits)
	}
	floor, git, err := pairN(cfg.reps, func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, cfg.work, env, front, args...)
		return d, err
	}, func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, h.git, nil, "git", "log", "--oneline")
		return d, err
	})
	return frontTimes{floor, git}, err
}

// frontWithEngine makes dir hold a copy of the front end (front) with
// engine beside it as the lean engine, and returns the copy's path: run, it
// takes the front end's unserved path (its start, the store found, no
// server at its socket) and replaces itself with engine.
func frontWithEngine(dir, front, engine string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	copyFront := filepath.Join(dir, "agentstate")
	for _, c := range [][2]string{{front, copyFront}, {engine, filepath.Join(dir, "agentstate-engine-lean")}} {
		b, err := os.ReadFile(c[0])
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(c[1], b, 0o755); err != nil {
			return "", err
		}
	}
	return copyFront, nil
}
