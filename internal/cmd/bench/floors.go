package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// w21Floors: what an unserved command cannot go below on this machine,
// measured in the same run as the rows it bounds (10f), each against
// the comparison of that row.
//
//   - the engine's start: the version command of the engine the front end
//     starts (engineBin), which opens no store, against git cat-file -p
//     HEAD:file (an unserved get runs the front end and then the engine:
//     10f's floor);
//   - the store's read-only open and close, in-process.
//
// The first sql query's floor is row 16f (workload 16, on its own store).
func w21Floors(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cfg.work, "floors")
	store, gitDir := filepath.Join(base, "store"), filepath.Join(base, "git")
	if err := os.MkdirAll(gitDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(gitDir, "file"), []byte("value\n"), 0o644); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "file"}, {"commit", "-q", "-m", "one"}} {
		if _, _, err := r.run(ctx, gitDir, nil, "git", args...); err != nil {
			return nil, err
		}
	}
	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "init"); err != nil {
		return nil, err
	}
	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "put", "key", filepath.Join(gitDir, "file")); err != nil {
		return nil, err
	}
	engine := engineBin(cfg)
	hello, err := helloWorld(ctx, cfg)
	if err != nil {
		return nil, err
	}
	timeCmd := func(dir, name string, args ...string) timed {
		return func(int) (time.Duration, error) {
			_, d, err := r.run(ctx, dir, nil, name, args...)
			return d, err
		}
	}
	gitGet := timeCmd(gitDir, "git", "cat-file", "-p", "HEAD:file")
	n := startReps(cfg)
	getA, getG, err := pairN(n, timeCmd(base, cfg.bin, "--store", store, "get", "key"), gitGet)
	if err != nil {
		return nil, err
	}
	engA, engG, err := pairN(n, timeCmd(base, engine, "version"), gitGet)
	if err != nil {
		return nil, err
	}
	helloA, helloG, err := pairN(n, timeCmd(base, hello), gitGet)
	if err != nil {
		return nil, err
	}
	// The floors below the engine, in the same run: a program linking only
	// Badger that opens the store read-only and reads the value's block,
	// and one linking only the store and the read model that runs the get
	// (what a slim read-only engine would start as). Each must print what
	// get prints.
	value, err := os.ReadFile(filepath.Join(gitDir, "file"))
	if err != nil {
		return nil, err
	}
	bfloor, err := buildFloor(ctx, cfg, "badgerfloor")
	if err != nil {
		return nil, err
	}
	slim, err := buildFloor(ctx, cfg, "slimget")
	if err != nil {
		return nil, err
	}
	blockKey := hex.EncodeToString(append([]byte{'b'}, objects.NewValue(value).CID.Bytes()...))
	agent := "main"
	for _, args := range [][]string{{bfloor, store, blockKey}, {slim, store, agent, "key"}} {
		out, _, err := r.run(ctx, base, nil, args[0], args[1:]...)
		if err != nil {
			return nil, err
		}
		if out != string(value) {
			return nil, fmt.Errorf("%s printed %q, want %q", filepath.Base(args[0]), out, value)
		}
	}
	floorA, floorG, err := pairN(n, timeCmd(base, bfloor, store, blockKey), gitGet)
	if err != nil {
		return nil, err
	}
	// The get and the slim program each timed alternately with the floor.
	getF, floorF, err := pairN(n, timeCmd(base, cfg.bin, "--store", store, "get", "key"), timeCmd(base, bfloor, store, blockKey))
	if err != nil {
		return nil, err
	}
	slimA, slimF, err := pairN(n, timeCmd(base, slim, store, agent, "key"), timeCmd(base, bfloor, store, blockKey))
	if err != nil {
		return nil, err
	}
	openM, _, err := pairN(n, func(int) (time.Duration, error) {
		t0 := time.Now()
		rp, err := repo.Open(store, repo.Options{ReadOnly: true})
		if err != nil {
			return 0, err
		}
		err = rp.Close()
		return time.Since(t0), err
	}, nil)
	if err != nil {
		return nil, err
	}
	rows := []row{
		{id: "21a", name: "floor of 10f: the engine's start (the engine the front end starts, its version command) vs git cat-file", as: fmtDur(engA), git: fmtDur(engG), ratio: ratio(float64(engA), float64(engG)),
			note: fmt.Sprintf("in the same run: the unserved get (10f) %s against git's %s (%s); a hello-world Go program %s against %s (%s); an unserved get is the front end, then the engine",
				fmtDur(getA), fmtDur(getG), ratio(float64(getA), float64(getG)), fmtDur(helloA), fmtDur(helloG), ratio(float64(helloA), float64(helloG)))},
		{id: "21b", name: "the store's read-only open and close (in-process)", as: fmtDur(openM), git: "-", ratio: ratio(float64(openM), float64(getG)),
			note: "ratio: against git cat-file's whole run (row 21a)"},
		{id: "21d", name: "floor of 10f: a program linking only Badger: start, read-only open, the value's block read and printed, vs git cat-file", as: fmtDur(floorA), git: fmtDur(floorG), ratio: ratio(float64(floorA), float64(floorG)),
			target: "-", verdict: floorVerdict(float64(floorA) / float64(floorG)),
			note: fmt.Sprintf("Badger opened with the store's options (internal/cmd/bench/badgerfloor); timed alternately with it, the unserved get (10f) took %s against its %s (%s)", fmtDur(getF), fmtDur(floorF), ratio(float64(getF), float64(floorF)))},
		{id: "21e", name: "  a program linking only the store and the read model, get of the key (a slim read-only engine), vs the Badger floor (21d)", as: fmtDur(slimA), git: fmtDur(slimF), ratio: ratio(float64(slimA), float64(slimF)),
			note: fmt.Sprintf("git column: the Badger-only floor, timed alternately; internal/cmd/bench/slimget: repo.Open read-only, inspect's Open, the value copied out, no front end, command line, SQLite, ENS or MCP; the unserved get against the same floor: %s", ratio(float64(getF), float64(floorF)))},
	}
	return rows, nil
}

// floorVerdict says whether 10f's target (2x git) is above this machine's
// floor: when the floor alone is over 2x git, 10f cannot be met here.
func floorVerdict(r float64) string {
	if r > 2 {
		return fmt.Sprintf("10f below this floor (%.2fx > 2x)", r)
	}
	return "10f reachable above this floor"
}

// buildFloor builds the floor program internal/cmd/bench/NAME (a package of
// this module) into the scratch directory, as the engine is built (go
// build, cgo as the toolchain defaults).
func buildFloor(ctx context.Context, cfg *config, name string) (string, error) {
	return buildFloorTags(ctx, cfg, name, "")
}

// buildFloorTags is buildFloor with build tags (comma-separated; the
// binary is named after them too).
func buildFloorTags(ctx context.Context, cfg *config, name, tags string) (string, error) {
	bin := filepath.Join(cfg.work, "floors-bin", name)
	args := []string{"build", "-trimpath"}
	if tags != "" {
		bin += "-" + strings.ReplaceAll(tags, ",", "-")
		args = append(args, "-tags", tags)
	}
	// Built every run, not reused from a scratch directory kept (-keep)
	// by an earlier run of other sources: go's build cache makes it cheap.
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", bin, "github.com/agentstate/agentstate/internal/cmd/bench/"+name)...)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s (run the bench from the agentstate module): %v\n%s", name, err, out)
	}
	return bin, nil
}
