package inspect_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
)

// gitRepo runs git in a fresh repository with fixed identities and dates.
type gitRepo struct {
	t   *testing.T
	dir string
}

func (g *gitRepo) run(stdin string, env []string, args ...string) string {
	g.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = g.dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+g.dir, "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.org",
		"GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.org")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		g.t.Fatalf("git %v: %v: %s", args, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

var porcelainHeader = regexp.MustCompile(`^([0-9a-f]{40}) \d+ (\d+)`)

// blame returns git blame's commit for each line of f.txt at rev.
func (g *gitRepo) blame(rev string) []string {
	var out []string
	for _, l := range strings.Split(g.run("", nil, "blame", "--porcelain", rev, "--", "f.txt"), "\n") {
		if m := porcelainHeader.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			for len(out) < n {
				out = append(out, "")
			}
			out[n-1] = m[1]
		}
	}
	return out
}

// randomHistory builds the same random history of a text file f.txt (and
// a key "other" some commits change alone) in a store and in a git
// repository: edits on up to three lines of work, forks of a line, merges
// whose result keeps any of both sides' lines and adds its own, some
// merges taking one side whole. Every line is unique and every version is
// the lines it holds in one global order (each line placed between its
// neighbours when made), so a line diff of any two versions has one
// answer and git's diff and ours cannot differ by a tie.
type randomHistory struct {
	r       *repo.Repo
	git     *gitRepo
	commits []objects.CID
	toGit   map[objects.CID]string
}

func buildRandomHistory(t *testing.T, seed uint64, steps int) *randomHistory {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	h := &randomHistory{r: repo.New(memory.New()), git: &gitRepo{t: t, dir: t.TempDir()}, toGit: map[objects.CID]string{}}
	h.git.run("", nil, "init", "-q")
	clock := int64(1_700_000_000)
	h.r.Now = func() int64 { return clock }
	pos := map[int]float64{}
	next := 0
	fresh := func(lines []int) []int {
		i := rng.IntN(len(lines) + 1)
		lo, hi := 0.0, 1.0
		if i > 0 {
			lo = pos[lines[i-1]]
		}
		if i < len(lines) {
			hi = pos[lines[i]]
		}
		next++
		pos[next] = lo + (hi-lo)*(0.25+rng.Float64()/2)
		return slices.Insert(slices.Clone(lines), i, next)
	}
	text := func(lines []int) string {
		var b strings.Builder
		for _, l := range lines {
			fmt.Fprintf(&b, "line %d\n", l)
		}
		return b.String()
	}
	type state struct {
		commit objects.CID
		lines  []int
		other  int
	}
	commit := func(parents []state, lines []int, other int) state {
		clock += int64(rng.IntN(2)) // ties too
		sort.Slice(lines, func(i, j int) bool { return pos[lines[i]] < pos[lines[j]] })
		tr := objects.NewTree(h.r.Blocks)
		var blocks []objects.Block
		for _, kv := range [][2]string{{"f.txt", text(lines)}, {"other", fmt.Sprint(other)}} {
			val, bs := objects.NewFileValue([]byte(kv[1]))
			blocks = append(blocks, bs...)
			if _, err := tr.Put(ctx, kv[0], val); err != nil {
				t.Fatal(err)
			}
		}
		root, nodes := tr.Flush()
		var ps []objects.CID
		gitArgs := []string{"commit-tree", "-m", fmt.Sprint("c", len(h.commits))}
		for _, p := range parents {
			ps = append(ps, p.commit)
			gitArgs = append(gitArgs, "-p", h.toGit[p.commit])
		}
		id, cm, err := h.r.WriteCommit(ctx, repo.CommitSpec{Tree: root, Parents: ps, Message: "c", Blocks: append(blocks, nodes...)})
		if err != nil {
			t.Fatal(err)
		}
		fblob := h.git.run(text(lines), nil, "hash-object", "-w", "--stdin")
		oblob := h.git.run(fmt.Sprint(other), nil, "hash-object", "-w", "--stdin")
		gtree := h.git.run(fmt.Sprintf("100644 blob %s\tf.txt\n100644 blob %s\tother\n", fblob, oblob), nil, "mktree")
		date := fmt.Sprintf("%d +0000", cm.Time)
		h.toGit[id] = h.git.run("", []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, append(gitArgs, gtree)...)
		h.commits = append(h.commits, id)
		return state{id, lines, other}
	}
	var lines []int
	for range 5 {
		lines = fresh(lines)
	}
	heads := []state{commit(nil, lines, 0)}
	merge := func(a, b state) state {
		if a.commit == b.commit {
			return a
		}
		switch rng.IntN(5) {
		case 0:
			return commit([]state{a, b}, slices.Clone(a.lines), a.other+b.other)
		case 1:
			return commit([]state{a, b}, slices.Clone(b.lines), a.other+b.other)
		}
		var m []int
		for _, l := range append(slices.Clone(a.lines), b.lines...) {
			if !slices.Contains(m, l) && rng.IntN(10) > 0 {
				m = append(m, l)
			}
		}
		sort.Slice(m, func(i, j int) bool { return pos[m[i]] < pos[m[j]] })
		for range rng.IntN(3) {
			m = fresh(m)
		}
		return commit([]state{a, b}, m, a.other+b.other)
	}
	for range steps {
		i := rng.IntN(len(heads))
		switch x := rng.IntN(20); {
		case x < 5 && len(heads) > 1:
			j := (i + 1 + rng.IntN(len(heads)-1)) % len(heads)
			heads[i] = merge(heads[i], heads[j])
			heads = slices.Delete(heads, j, j+1)
		case x < 8 && len(heads) < 3:
			heads = append(heads, heads[i])
		case x < 11:
			heads[i] = commit([]state{heads[i]}, slices.Clone(heads[i].lines), heads[i].other+1)
		default:
			l := slices.Clone(heads[i].lines)
			for range rng.IntN(3) {
				if len(l) > 0 {
					k := rng.IntN(len(l))
					l = slices.Delete(l, k, k+1)
				}
			}
			for range rng.IntN(4) {
				l = fresh(l)
			}
			heads[i] = commit([]state{heads[i]}, l, heads[i].other)
		}
	}
	for len(heads) > 1 {
		heads[0] = merge(heads[0], heads[1])
		heads = slices.Delete(heads, 1, 2)
	}
	if _, _, err := h.r.CommitTree(ctx, repo.CommitRequest{Agent: "lumen", Tree: objects.EmptyTreeCID, Fresh: true, AllowEmpty: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.r.Reset(ctx, "lumen", heads[0].commit); err != nil {
		t.Fatal(err)
	}
	return h
}

// Blame's attribution of every line, at every commit of random histories
// with merges, is git blame's on the same history built in a real git
// repository.
func TestBlameAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed as the test's oracle: %v", err)
	}
	ctx := context.Background()
	merges := 0
	for seed := range uint64(4) {
		h := buildRandomHistory(t, seed, 30)
		v := inspect.New(h.r)
		for _, id := range h.commits {
			cm, err := h.r.Commit(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(cm.Parents) > 1 {
				merges++
			}
			b, err := v.Blame(ctx, "lumen", id.String(), "f.txt")
			if err != nil {
				t.Fatalf("seed %d, blame at %s: %v", seed, id.Short(), err)
			}
			want := h.git.blame(h.toGit[id])
			if len(want) != len(b.Lines) {
				t.Fatalf("seed %d at %s: %d lines, git blame has %d", seed, id.Short(), len(b.Lines), len(want))
			}
			for i, l := range b.Lines {
				if got := h.toGit[l.Commit]; got != want[i] || l.Line != i+1 || l.Boundary {
					t.Fatalf("seed %d at %s, line %d %q: commit %s (git %s), git blame says %s", seed, id.Short(), i+1, l.Text, l.Commit.Short(), got, want[i])
				}
			}
		}
	}
	if merges < 10 {
		t.Fatalf("only %d merges in the histories compared", merges)
	}
}
