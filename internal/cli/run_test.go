package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/refs/receipt"
)

// The read commands are functions of their options: each table row calls
// a runX directly, with no command-line library, over inspecttest's cut
// store, and checks what it writes (the read model's JSON, or text) or the
// error it returns. Nothing is written to the store.
func TestReadCommandsAsFunctions(t *testing.T) {
	ctx := context.Background()
	c := inspecttest.NewCut(t)
	v := inspect.New(c.R)
	ro := readOpts{View: v, Agent: inspecttest.A}
	asJSON := func(x any, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	shown := func(rev string, patch bool) string {
		s, err := v.Show(ctx, inspecttest.A, rev, patch)
		return asJSON(s, err)
	}
	changes := func(from, to string, patch bool) string {
		chs, err := v.Diff(ctx, inspecttest.A, from, to, patch)
		return asJSON(chs, err)
	}
	entries := func(rev string) string { es, _, err := v.List(ctx, inspecttest.A, rev, "", 0); return asJSON(es, err) }
	value := func(rev, key string) string { x, err := v.Get(ctx, inspecttest.A, rev, key, -1); return asJSON(x, err) }
	agents := func() string { as, err := v.Agents(ctx); return asJSON(as, err) }
	ops := func(n int) string { o, err := v.Oplog(ctx, inspecttest.A, n); return asJSON(o, err) }
	receipts := func() string { rs, err := v.Receipts(ctx, inspecttest.A, true); return asJSON(rs, err) }
	history := func(rev string) string {
		h, err := v.Log(ctx, inspecttest.A, inspect.LogOptions{Rev: rev})
		return asJSON(h.Commits, err)
	}
	// oneline is what log --oneline prints for step i+1 (0-based as
	// c.Steps) of A's log: its line, then, at a cut, the cut's.
	oneline := func(i int) string {
		deco := map[int]string{5: "(HEAD -> lumen) ", 4: "(late-lumen) ", 1: "(tag: keep-me) "}[i]
		s := fmt.Sprintf("%s %s[step-%d] put memory.md\n", c.Steps[i].Short(), deco, i+1)
		if i == 4 || i == 1 {
			s += "~~ history cut here by forget at 2023-11-15 05:13:20 +0000 (--keep-last 2); 4 older operations and 3 commits forgotten in all\n"
		}
		return s
	}
	stepTime := func(n int) time.Time { return time.Unix(1_700_000_000+3600*int64(n), 0) }
	rc, err := receipt.Parse(func() []byte {
		for l, err := range c.R.Tape.Lines(ctx, inspecttest.A) {
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		return nil
	}())
	if err != nil {
		t.Fatal(err)
	}

	type row struct {
		name string
		run  func(out *bytes.Buffer) error
		want string // the whole output, when set
		has  string // a line of the output, when set
		err  string // the error, when one is wanted
		kind error  // its kind, when it has one
	}
	rows := []row{
		{name: "show --json", run: func(o *bytes.Buffer) error {
			return runShow(ctx, showOptions{readOpts: ro, JSON: true}, []string{"HEAD"}, o)
		}, want: shown("HEAD", false)},
		{name: "show --json -p", run: func(o *bytes.Buffer) error {
			return runShow(ctx, showOptions{readOpts: ro, JSON: true, Patch: true}, []string{"HEAD"}, o)
		}, want: shown("HEAD", true)},
		{name: "show -p", run: func(o *bytes.Buffer) error {
			return runShow(ctx, showOptions{readOpts: ro, Patch: true}, []string{"HEAD"}, o)
		}, has: "+step 6"},
		{name: "show past the parent a forget cut", run: func(o *bytes.Buffer) error { return runShow(ctx, showOptions{readOpts: ro}, []string{"HEAD~1"}, o) },
			has: "~~ the first parent was forgotten (history cut by forget): what this commit changed is not known ~~"},
		{name: "show REV:KEY", run: func(o *bytes.Buffer) error {
			return runShow(ctx, showOptions{readOpts: ro}, []string{"HEAD~1:memory.md"}, o)
		}, want: "step 5\n"},
		{name: "show past the cut", run: func(o *bytes.Buffer) error { return runShow(ctx, showOptions{readOpts: ro}, []string{"HEAD~2"}, o) },
			err: "what is past the cut is gone", kind: inspect.ErrNotFound},
		{name: "show a bad key", run: func(o *bytes.Buffer) error { return runShow(ctx, showOptions{readOpts: ro}, []string{"HEAD:/x"}, o) }, err: "key", kind: inspect.ErrBadRequest},
		{name: "show two arguments", run: func(o *bytes.Buffer) error {
			return runShow(ctx, showOptions{readOpts: ro}, []string{"HEAD", "HEAD"}, o)
		}, err: "takes 1 argument"},
		{name: "diff --json", run: func(o *bytes.Buffer) error {
			return runDiff(ctx, diffOptions{readOpts: ro, JSON: true}, []string{"keep-me"}, o)
		}, want: changes("keep-me", "HEAD", false)},
		{name: "diff --stat", run: func(o *bytes.Buffer) error {
			return runDiff(ctx, diffOptions{readOpts: ro, Stat: true}, []string{"keep-me", "HEAD"}, o)
		},
			want: " M memory.md | 7 B -> 7 B\n 1 keys changed: 0 added, 1 modified, 0 removed\n"},
		{name: "diff", run: func(o *bytes.Buffer) error { return runDiff(ctx, diffOptions{readOpts: ro}, []string{"keep-me"}, o) }, want: "M\tmemory.md\n"},
		{name: "diff --json -p", run: func(o *bytes.Buffer) error {
			return runDiff(ctx, diffOptions{readOpts: ro, JSON: true, Patch: true}, []string{"keep-me", "HEAD"}, o)
		}, want: changes("keep-me", "HEAD", true)},
		{name: "diff with no revision is HEAD's change", run: func(o *bytes.Buffer) error {
			return runDiff(ctx, diffOptions{readOpts: ro, JSON: true}, nil, o)
		}, want: changes("HEAD~1", "HEAD", false)},
		{name: "diff with three revisions", run: func(o *bytes.Buffer) error {
			return runDiff(ctx, diffOptions{readOpts: ro}, []string{"HEAD~2", "HEAD~1", "HEAD"}, o)
		}, err: "takes at most 2 revisions"},
		{name: "diff from an invalid revision", run: func(o *bytes.Buffer) error {
			return runDiff(ctx, diffOptions{readOpts: ro}, []string{"no-such-tag"}, o)
		}, kind: inspect.ErrBadRequest, err: "no-such-tag"},
		{name: "get", run: func(o *bytes.Buffer) error {
			return runGet(ctx, getOptions{readOpts: ro, At: "HEAD"}, []string{"memory.md"}, o)
		}, want: "step 6\n"},
		{name: "get --json --at", run: func(o *bytes.Buffer) error {
			return runGet(ctx, getOptions{readOpts: ro, At: "keep-me", JSON: true}, []string{"memory.md"}, o)
		}, want: value("keep-me", "memory.md")},
		{name: "get a missing key", run: func(o *bytes.Buffer) error {
			return runGet(ctx, getOptions{readOpts: ro, At: "HEAD"}, []string{"nope.md"}, o)
		},
			err: `key "nope.md" does not exist`, kind: inspect.ErrNotFound},
		{name: "ls", run: func(o *bytes.Buffer) error { return runLs(ctx, lsOptions{readOpts: ro, At: "HEAD"}, nil, o) }, want: "memory.md\n"},
		{name: "ls -l", run: func(o *bytes.Buffer) error {
			return runLs(ctx, lsOptions{readOpts: ro, At: "HEAD", Long: true}, []string{"mem"}, o)
		}, has: "      7 B memory.md"},
		{name: "ls --json", run: func(o *bytes.Buffer) error {
			return runLs(ctx, lsOptions{readOpts: ro, At: "HEAD", JSON: true}, nil, o)
		}, want: entries("HEAD")},
		{name: "ls a prefix with no keys", run: func(o *bytes.Buffer) error { return runLs(ctx, lsOptions{readOpts: ro, At: "HEAD"}, []string{"x/"}, o) }, want: ""},
		{name: "agents --json", run: func(o *bytes.Buffer) error { return runAgents(ctx, agentsOptions{readOpts: ro, JSON: true}, nil, o) }, want: agents()},
		{name: "agents", run: func(o *bytes.Buffer) error { return runAgents(ctx, agentsOptions{readOpts: ro}, nil, o) }, has: "* lumen"},
		{name: "agents with an argument", run: func(o *bytes.Buffer) error { return runAgents(ctx, agentsOptions{readOpts: ro}, []string{"x"}, o) }, err: "takes no arguments"},
		{name: "oplog --json -n 2", run: func(o *bytes.Buffer) error {
			return runOplog(ctx, oplogOptions{readOpts: ro, N: 2, JSON: true}, nil, o)
		}, want: ops(2)},
		{name: "oplog -n 0", run: func(o *bytes.Buffer) error { return runOplog(ctx, oplogOptions{readOpts: ro, N: 0}, nil, o) }, want: ""},
		{name: "log --json", run: func(o *bytes.Buffer) error { return runLog(ctx, logOptions{readOpts: ro, N: -1, JSON: true}, nil, o) }, want: history("HEAD")},
		{name: "log --oneline", run: func(o *bytes.Buffer) error { return runLog(ctx, logOptions{readOpts: ro, N: 1, Oneline: true}, nil, o) },
			want: c.Steps[5].Short() + " (HEAD -> lumen) [step-6] put memory.md\n"},
		{name: "log of a fork made on the cut history", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: readOpts{View: v, Agent: inspecttest.Late}, N: -1, Oneline: true}, nil, o)
		}, has: "~~ history cut here by forget"},
		{name: "log of an agent with no commits", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: readOpts{View: v, Agent: inspecttest.Empty}, N: -1}, nil, o)
		}, kind: inspect.ErrNotFound, err: inspecttest.Empty},
		{name: "log A..B is what B reaches and A does not", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1, Oneline: true}, []string{"keep-me..HEAD"}, o)
		}, want: oneline(5) + oneline(4)},
		{name: "log ..keep-me is empty", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1, Oneline: true}, []string{"HEAD..keep-me"}, o)
		}, want: ""},
		{name: "log A...B is refused", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1}, []string{"keep-me...HEAD"}, o)
		}, err: "A...B is not supported", kind: inspect.ErrBadRequest},
		{name: "log --since --until", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1, Oneline: true, Since: stepTime(2), Until: stepTime(5)}, nil, o)
		}, want: oneline(4) + oneline(1)},
		{name: "log --since past every commit", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1, Oneline: true, Since: stepTime(7)}, nil, o)
		}, want: ""},
		{name: "log --until before --since", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1, Since: stepTime(5), Until: stepTime(2)}, nil, o)
		}, err: "is before since", kind: inspect.ErrBadRequest},
		{name: "log --task", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1, Oneline: true, Task: "step-5"}, nil, o)
		}, want: oneline(4)},
		{name: "log --grep any case", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1, Oneline: true, Grep: "STEP-2"}, nil, o)
		}, want: oneline(1)},
		{name: "log --grep of 2 KiB", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1, Grep: strings.Repeat("x", 2048)}, nil, o)
		}, err: "search text of 2048 bytes", kind: inspect.ErrBadRequest},
		{name: "log -- KEY", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: 1, Oneline: true, Keys: []string{"nope.md", "memory.md"}}, nil, o)
		}, want: oneline(5)},
		{name: "log -- a key no commit changed", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1, Oneline: true, Keys: []string{"nope.md"}}, nil, o)
		}, want: ""},
		{name: "log -- a bad key", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: -1, Keys: []string{"/x"}}, nil, o)
		}, err: "key", kind: inspect.ErrBadRequest},
		{name: "log --stat", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: 1, Oneline: true, Stat: true}, nil, o)
		}, want: oneline(5) + " M memory.md | 7 B -> 7 B\n 1 keys changed: 0 added, 1 modified, 0 removed\n"},
		{name: "log -p", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: 1, Patch: true}, nil, o)
		}, has: "+step 6"},
		{name: "log -p with --path and keys after --: either", run: func(o *bytes.Buffer) error {
			return runLog(ctx, logOptions{readOpts: ro, N: 1, Oneline: true, Patch: true, Path: "memory.md", Keys: []string{"nope.md"}}, nil, o)
		}, has: "-step 5"},
		{name: "diff A..B", run: func(o *bytes.Buffer) error {
			return runDiff(ctx, diffOptions{readOpts: ro, JSON: true}, []string{"keep-me..HEAD"}, o)
		}, want: changes("keep-me", "HEAD", false)},
		{name: "diff ..B is HEAD..B", run: func(o *bytes.Buffer) error {
			return runDiff(ctx, diffOptions{readOpts: ro, JSON: true}, []string{"..keep-me"}, o)
		}, want: changes("HEAD", "keep-me", false)},
		{name: "diff A..B with REV2", run: func(o *bytes.Buffer) error {
			return runDiff(ctx, diffOptions{readOpts: ro}, []string{"keep-me..HEAD", "HEAD"}, o)
		}, err: "a range A..B alone"},
		{name: "receipts --verify --json", run: func(o *bytes.Buffer) error {
			return runReceipts(ctx, receiptsOptions{readOpts: ro, Verify: true, JSON: true}, nil, o)
		}, want: receipts()},
		{name: "receipts --verify", run: func(o *bytes.Buffer) error {
			return runReceipts(ctx, receiptsOptions{readOpts: ro, Verify: true}, nil, o)
		},
			has: "6 receipt(s) verified against 1 operator key(s)"},
		{name: "receipts from lines, a key that did not sign", run: func(o *bytes.Buffer) error {
			return runReceipts(ctx, receiptsOptions{readOpts: ro, Verify: true, Lines: [][]byte{rc.Line(), []byte("{not a receipt")},
				Keys: []ed25519.PublicKey{make(ed25519.PublicKey, 32)}}, nil, o)
		}, err: "2 of 2 receipt(s) failed verification"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var out bytes.Buffer
			err := r.run(&out)
			switch {
			case r.err != "" || r.kind != nil:
				if err == nil || !strings.Contains(err.Error(), r.err) || (r.kind != nil && !errors.Is(err, r.kind)) {
					t.Fatalf("error %v, want one saying %q (kind %v)", err, r.err, r.kind)
				}
			case err != nil:
				t.Fatal(err)
			case r.has != "":
				if !strings.Contains(out.String(), r.has) {
					t.Fatalf("output lacks %q:\n%s", r.has, out.String())
				}
			default:
				if out.String() != r.want {
					t.Fatalf("output\n%s\nwant\n%s", out.String(), r.want)
				}
			}
		})
	}
}
