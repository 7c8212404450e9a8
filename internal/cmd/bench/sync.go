package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
)

// w14Sync: a lineage of syncCommits single-key commits, in agentstate and in
// git (the same keys and values): clone store to store (agentstate clone)
// against git clone --no-local; then one new commit on the source and the
// bytes a pull moves, against git fetch of the same commit.
func w14Sync(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	n := 10_000
	if cfg.quick {
		n = 2_000
	}
	base := filepath.Join(cfg.work, "sync")
	src, gitSrc := filepath.Join(base, "src"), filepath.Join(base, "git-src")
	if _, err := keyCommits(ctx, src, false, n, 1); err != nil {
		return nil, err
	}
	if _, err := gitKeyCommits(ctx, r, gitSrc, n); err != nil {
		return nil, err
	}
	if _, err := r.seq(ctx, gitSrc, nil, []string{"git", "gc", "-q"}); err != nil {
		return nil, err
	}
	agent := agentName(0)
	var cloneAs, cloneGit []time.Duration
	var dst, gitDst string
	for i := range cfg.reps {
		dst, gitDst = filepath.Join(base, fmt.Sprint("dst-", i)), filepath.Join(base, fmt.Sprint("git-dst-", i))
		_, d, err := r.run(ctx, base, nil, cfg.bin, "--store", dst, "clone", src, agent)
		if err != nil {
			return nil, err
		}
		cloneAs = append(cloneAs, d)
		_, d, err = r.run(ctx, base, nil, "git", "clone", "-q", "--no-local", gitSrc, gitDst)
		if err != nil {
			return nil, err
		}
		cloneGit = append(cloneGit, d)
	}
	// One new commit on each source, then a pull / a fetch.
	sr, err := repo.Open(src, repo.Options{})
	if err != nil {
		return nil, err
	}
	fixedTime(sr)
	_, err = commitKey(ctx, sr, agent, keyName(n), keyValue(n))
	if cerr := sr.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	msg, v := "put "+keyName(n), keyValue(n)
	fi := fmt.Sprintf("commit refs/heads/main\ncommitter bench <bench@example.invalid> %s\ndata %d\n%s\nfrom refs/heads/main^0\nM 100644 inline %s\ndata %d\n%s\n", gitTime(n), len(msg), msg, keyName(n), len(v), v)
	fiPath := filepath.Join(base, "one.fi")
	if err := os.WriteFile(fiPath, []byte(fi), 0o644); err != nil {
		return nil, err
	}
	if _, _, err := r.run(ctx, gitSrc, nil, "sh", "-c", "git fast-import --quiet < "+fiPath); err != nil {
		return nil, err
	}
	out, pullDur, err := r.run(ctx, base, nil, cfg.bin, "--store", dst, "--agent", agent, "pull", "--json", "--ff-only", src)
	if err != nil {
		return nil, err
	}
	var rep struct {
		Transfer repo.SyncStats `json:"transfer"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return nil, fmt.Errorf("pull --json: %w: %s", err, out)
	}
	before, err := diskUsage(filepath.Join(gitDst, ".git", "objects"))
	if err != nil {
		return nil, err
	}
	_, fetchDur, err := r.run(ctx, gitDst, nil, "git", "-c", "fetch.unpackLimit=1000000", "fetch", "-q", "origin")
	if err != nil {
		return nil, err
	}
	after, err := diskUsage(filepath.Join(gitDst, ".git", "objects"))
	if err != nil {
		return nil, err
	}
	a, g := median(cloneAs), median(cloneGit)
	return []row{
		{id: "14a", name: fmt.Sprintf("clone of a %d-commit lineage, store to store", n), as: fmtDur(a), git: fmtDur(g), ratio: ratio(float64(a), float64(g)),
			note: "git column: git clone --no-local of the same history (packed by git gc)"},
		{id: "14b", name: "  pull of one new commit: bytes moved", as: fmt.Sprintf("%d B in %d blocks", rep.Transfer.Bytes, rep.Transfer.Blocks), git: fmt.Sprintf("%d B", after-before),
			ratio: ratio(float64(rep.Transfer.Bytes), float64(after-before)),
			note:  fmt.Sprintf("agentstate: the blocks pull copied (%d commit, the tree path, the value), in %s; git: the loose objects git fetch wrote (fetch.unpackLimit high: commit, trees, blob, compressed), in %s", rep.Transfer.Commits, fmtDur(pullDur), fmtDur(fetchDur))},
	}, nil
}
