package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/internal/textdiff"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func (e *env) writeJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func (e *env) cmdGet(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	key := c.Args().First()
	if err := objects.ValidateKey(key); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		v, data, err := e.lookup(r, c.String("at"), key)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(struct {
				Path    string      `json:"path"`
				CID     objects.CID `json:"cid"`
				Size    int         `json:"size"`
				Content []byte      `json:"content"` // base64
			}{key, v, len(data), data})
		}
		_, err = e.stdout.Write(data)
		return err
	})
}

func (e *env) valueAt(r *repo.Repo, rev, key string) ([]byte, error) {
	_, data, err := e.lookup(r, rev, key)
	return data, err
}

// lookup returns the value CID and content of key at rev.
func (e *env) lookup(r *repo.Repo, rev, key string) (objects.CID, []byte, error) {
	id, err := r.Resolve(e.ctx, e.agent, rev)
	if err != nil {
		return objects.CID{}, nil, err
	}
	t, err := r.Tree(e.ctx, id)
	if err != nil {
		return objects.CID{}, nil, err
	}
	v, ok, err := t.Get(e.ctx, key)
	if err != nil {
		return objects.CID{}, nil, err
	}
	if !ok {
		return objects.CID{}, nil, fmt.Errorf("key %q does not exist at %s (%s)", key, rev, id.Short())
	}
	data, err := objects.ReadValue(e.ctx, r.Blocks, v)
	return v, data, err
}

type lsEntry struct {
	Path string      `json:"path"`
	CID  objects.CID `json:"cid"`
	Size int64       `json:"size"`
}

func (e *env) cmdLs(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	prefix := c.Args().First()
	return e.withRepoRead(func(r *repo.Repo) error {
		id, err := r.Resolve(e.ctx, e.agent, c.String("at"))
		if err != nil {
			return err
		}
		t, err := r.Tree(e.ctx, id)
		if err != nil {
			return err
		}
		long, asJSON := c.Bool("long"), c.Bool("json")
		out := []lsEntry{}
		for en, err := range t.Entries(e.ctx, prefix) {
			if err != nil {
				return err
			}
			if !strings.HasPrefix(en.Key, prefix) {
				break
			}
			le := lsEntry{Path: en.Key, CID: en.Value, Size: -1}
			if long || asJSON {
				data, err := objects.ReadValue(e.ctx, r.Blocks, en.Value)
				if err != nil {
					return err
				}
				le.Size = int64(len(data))
			}
			if asJSON {
				out = append(out, le)
			} else if long {
				fmt.Fprintf(e.stdout, "%s %9d %s\n", en.Value.Short(), le.Size, en.Key)
			} else {
				fmt.Fprintln(e.stdout, en.Key)
			}
		}
		if asJSON {
			return e.writeJSON(out)
		}
		return nil
	})
}

type logJSON struct {
	CID        objects.CID       `json:"cid"`
	Parents    []objects.CID     `json:"parents"`
	Tree       objects.CID       `json:"tree"`
	Time       int64             `json:"time"`
	Message    string            `json:"message"`
	Metadata   map[string]string `json:"metadata"`
	BundleHash string            `json:"bundleHash"`
}

func (e *env) logJSON(r *repo.Repo, le dag.LogEntry) (logJSON, error) {
	h, err := r.BundleHash(e.ctx, le.Commit.Tree)
	if err != nil {
		return logJSON{}, err
	}
	parents := le.Commit.Parents
	if parents == nil {
		parents = []objects.CID{}
	}
	meta := le.Commit.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	return logJSON{CID: le.CID, Parents: parents, Tree: le.Commit.Tree, Time: le.Commit.Time,
		Message: le.Commit.Message, Metadata: meta, BundleHash: h.String()}, nil
}

func fmtTime(t int64) string { return time.Unix(t, 0).UTC().Format("2006-01-02 15:04:05 +0000") }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func (e *env) printCommit(le dag.LogEntry, head bool) {
	hdr := "commit " + le.CID.String()
	if head {
		hdr += " (HEAD -> " + e.agent + ")"
	}
	fmt.Fprintln(e.stdout, e.paint("33", hdr))
	if len(le.Commit.Parents) > 1 {
		var ps []string
		for _, p := range le.Commit.Parents {
			ps = append(ps, p.Short())
		}
		fmt.Fprintf(e.stdout, "Merge:  %s\n", strings.Join(ps, " "))
	}
	fmt.Fprintf(e.stdout, "Date:   %s\n", fmtTime(le.Commit.Time))
	for _, k := range sortedKeys(le.Commit.Metadata) {
		fmt.Fprintf(e.stdout, "%-7s %s\n", k+":", le.Commit.Metadata[k])
	}
	fmt.Fprintln(e.stdout)
	for _, line := range strings.Split(le.Commit.Message, "\n") {
		fmt.Fprintf(e.stdout, "    %s\n", line)
	}
}

func (e *env) cmdLog(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	rev := revArg(c, 0)
	path := c.String("path")
	if path != "" {
		if err := objects.ValidateKey(path); err != nil {
			return usagef("--path: %v", err)
		}
	}
	limit := c.Int("n")
	return e.withRepoRead(func(r *repo.Repo) error {
		start, err := r.Resolve(e.ctx, e.agent, rev)
		if err != nil {
			return err
		}
		head, _ := r.Refs.Head(e.ctx, e.agent)
		var out []logJSON
		n := 0
		for le, err := range dag.Log(e.ctx, r.Blocks, start) {
			if err != nil {
				return err
			}
			if limit >= 0 && n >= limit {
				break
			}
			if path != "" {
				ok, err := dag.TouchesKey(e.ctx, r.Blocks, le.Commit, path)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			n++
			switch {
			case c.Bool("json"):
				j, err := e.logJSON(r, le)
				if err != nil {
					return err
				}
				out = append(out, j)
			case c.Bool("oneline"):
				fmt.Fprintf(e.stdout, "%s %s\n", e.paint("33", le.CID.Short()), firstLine(le.Commit.Message))
			default:
				if n > 1 {
					fmt.Fprintln(e.stdout)
				}
				e.printCommit(le, le.CID == head.Commit)
			}
		}
		if c.Bool("json") {
			if out == nil {
				out = []logJSON{}
			}
			return e.writeJSON(out)
		}
		return nil
	})
}

func (e *env) cmdShow(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	arg := c.Args().First()
	rev, key, hasKey := strings.Cut(arg, ":")
	if hasKey {
		if err := objects.ValidateKey(key); err != nil {
			return err
		}
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		if hasKey {
			data, err := e.valueAt(r, rev, key)
			if err != nil {
				return err
			}
			_, err = e.stdout.Write(data)
			return err
		}
		id, cm, err := r.ResolveCommit(e.ctx, e.agent, rev)
		if err != nil {
			return err
		}
		le := dag.LogEntry{CID: id, Commit: cm}
		changes, err := e.changesFromParent(r, cm)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			j, err := e.logJSON(r, le)
			if err != nil {
				return err
			}
			return e.writeJSON(struct {
				logJSON
				Changes []objects.Change `json:"changes"`
			}{j, changes})
		}
		head, _ := r.Refs.Head(e.ctx, e.agent)
		e.printCommit(le, id == head.Commit)
		h, err := r.BundleHash(e.ctx, cm.Tree)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "\nTree:   %s\nBundle: %s\n\n", cm.Tree, h)
		if c.Bool("patch") {
			return e.printPatch(r, changes)
		}
		e.printChanges(changes)
		return nil
	})
}

// maxPatchValue bounds the values whose line diff is shown.
const maxPatchValue = 1 << 20

// printPatch prints a unified diff per changed text value.
func (e *env) printPatch(r *repo.Repo, changes []objects.Change) error {
	read := func(v objects.CID) ([]byte, error) {
		if v.IsZero() {
			return nil, nil
		}
		return objects.ReadValue(e.ctx, r.Blocks, v)
	}
	for _, ch := range changes {
		a, err := read(ch.Old)
		if err != nil {
			return err
		}
		b, err := read(ch.New)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, e.paint("1", "diff a/"+ch.Path+" b/"+ch.Path))
		oldName, newName := "a/"+ch.Path, "b/"+ch.Path
		switch ch.Change {
		case objects.Added:
			oldName = "/dev/null"
		case objects.Removed:
			newName = "/dev/null"
		}
		if !textdiff.IsText(a) || !textdiff.IsText(b) || len(a) > maxPatchValue || len(b) > maxPatchValue {
			fmt.Fprintf(e.stdout, "Binary or large values differ (%d -> %d bytes)\n", len(a), len(b))
			continue
		}
		for _, line := range strings.SplitAfter(textdiff.Unified(oldName, newName, string(a), string(b), 3), "\n") {
			switch {
			case strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++"):
				line = e.paint("32", strings.TrimSuffix(line, "\n")) + "\n"
			case strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "---"):
				line = e.paint("31", strings.TrimSuffix(line, "\n")) + "\n"
			case strings.HasPrefix(line, "@@"):
				line = e.paint("36", strings.TrimSuffix(line, "\n")) + "\n"
			}
			fmt.Fprint(e.stdout, line)
		}
	}
	return nil
}

func (e *env) changesFromParent(r *repo.Repo, cm *objects.Commit) ([]objects.Change, error) {
	from := objects.EmptyTreeCID
	if len(cm.Parents) > 0 {
		pc, err := r.Commit(e.ctx, cm.Parents[0])
		if err != nil {
			return nil, err
		}
		from = pc.Tree
	}
	changes := []objects.Change{}
	for ch, err := range objects.DiffTrees(e.ctx, r.Blocks, from, cm.Tree) {
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch)
	}
	return changes, nil
}

var changeLetter = map[objects.ChangeKind]string{objects.Added: "A", objects.Removed: "D", objects.Modified: "M"}
var changeColor = map[objects.ChangeKind]string{objects.Added: "32", objects.Removed: "31", objects.Modified: "36"}

func (e *env) printChanges(changes []objects.Change) {
	for _, ch := range changes {
		fmt.Fprintf(e.stdout, "%s\t%s\n", e.paint(changeColor[ch.Change], changeLetter[ch.Change]), ch.Path)
	}
}

func (e *env) cmdDiff(c *cli.Context) error {
	if err := nargs(c, 1, 2); err != nil {
		return err
	}
	rev2 := revArg(c, 1)
	return e.withRepoRead(func(r *repo.Repo) error {
		a, err := r.Resolve(e.ctx, e.agent, c.Args().Get(0))
		if err != nil {
			return err
		}
		b, err := r.Resolve(e.ctx, e.agent, rev2)
		if err != nil {
			return err
		}
		changes := []objects.Change{}
		for ch, err := range dag.Diff(e.ctx, r.Blocks, a, b) {
			if err != nil {
				return err
			}
			changes = append(changes, ch)
		}
		switch {
		case c.Bool("json"):
			return e.writeJSON(changes)
		case c.Bool("patch"):
			return e.printPatch(r, changes)
		case c.Bool("stat"):
			var added, removed, modified int
			for _, ch := range changes {
				size := func(v objects.CID) string {
					if v.IsZero() {
						return "-"
					}
					data, err := objects.ReadValue(e.ctx, r.Blocks, v)
					if err != nil {
						return "?"
					}
					return fmt.Sprint(len(data))
				}
				fmt.Fprintf(e.stdout, " %s %s | %s -> %s bytes\n", changeLetter[ch.Change], ch.Path, size(ch.Old), size(ch.New))
				switch ch.Change {
				case objects.Added:
					added++
				case objects.Removed:
					removed++
				default:
					modified++
				}
			}
			fmt.Fprintf(e.stdout, " %d keys changed: %d added, %d modified, %d removed\n", len(changes), added, modified, removed)
		default:
			e.printChanges(changes)
		}
		return nil
	})
}

type oplogJSON struct {
	Seq    uint64      `json:"seq"`
	Op     string      `json:"op"`
	Old    objects.CID `json:"old"`
	New    objects.CID `json:"new"`
	Time   int64       `json:"time"`
	Task   string      `json:"task"`
	Target uint64      `json:"target,omitempty"`
	Note   string      `json:"note,omitempty"`
	Prev   string      `json:"prev"`
}

func (e *env) cmdOplog(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		if _, err := r.Refs.Head(e.ctx, e.agent); err != nil {
			return err
		}
		entries, err := r.Refs.Entries(e.ctx, e.agent)
		if err != nil {
			return err
		}
		out := []oplogJSON{}
		limit := c.Int("n")
		for i := len(entries) - 1; i >= 0; i-- {
			if limit >= 0 && len(entries)-1-i >= limit {
				break
			}
			en := entries[i]
			if c.Bool("json") {
				out = append(out, oplogJSON{en.Seq, string(en.Op), en.Old, en.New, en.Time, en.Task, en.Target, en.Note, en.Prev})
				continue
			}
			old := "(none)"
			if !en.Old.IsZero() {
				old = en.Old.Short()
			}
			line := fmt.Sprintf("%4d %-7s %s -> %s  %s", en.Seq, en.Op, old, en.New.Short(), fmtTime(en.Time))
			if en.Task != "" {
				line += "  task=" + en.Task
			}
			if en.Target != 0 {
				line += fmt.Sprintf("  (of operation %d)", en.Target)
			}
			if en.Note != "" {
				line += "  " + en.Note
			}
			fmt.Fprintln(e.stdout, line)
		}
		if c.Bool("json") {
			return e.writeJSON(out)
		}
		return nil
	})
}

type agentJSON struct {
	Agent      string      `json:"agent"`
	Head       objects.CID `json:"head"`
	Operations uint64      `json:"operations"`
}

func (e *env) cmdAgents(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		heads, err := r.Refs.Agents(e.ctx)
		if err != nil {
			return err
		}
		out := []agentJSON{}
		for _, h := range heads {
			if c.Bool("json") {
				out = append(out, agentJSON{h.Agent, h.Commit, h.Seq})
				continue
			}
			mark := " "
			if h.Agent == e.agent {
				mark = "*"
			}
			fmt.Fprintf(e.stdout, "%s %-20s %s  (%d operations)\n", mark, h.Agent, h.Commit.Short(), h.Seq)
		}
		if c.Bool("json") {
			return e.writeJSON(out)
		}
		return nil
	})
}

func (e *env) cmdHash(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	if dir := c.String("dir"); dir != "" {
		if c.NArg() > 0 {
			return usagef("hash: give either --dir or a revision, not both")
		}
		h, err := hashDir(e, dir)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(map[string]string{"bundleHash": h.String(), "dir": dir})
		}
		fmt.Fprintln(e.stdout, h)
		return nil
	}
	rev := revArg(c, 0)
	return e.withRepoRead(func(r *repo.Repo) error {
		id, cm, err := r.ResolveCommit(e.ctx, e.agent, rev)
		if err != nil {
			return err
		}
		h, err := r.BundleHash(e.ctx, cm.Tree)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(map[string]string{"bundleHash": h.String(), "commit": id.String(), "tree": cm.Tree.String()})
		}
		fmt.Fprintln(e.stdout, h)
		return nil
	})
}

// hashDir computes the bundle hash of a directory on disk, streaming each file.
func hashDir(e *env, dir string) (objects.BundleHash, error) {
	files, skipped, err := export.Scan(e.ctx, dir)
	if err != nil {
		return objects.BundleHash{}, err
	}
	for _, s := range skipped {
		fmt.Fprintf(e.stderr, "agentstate: skipped %s: %s\n", s.Path, s.Reason)
	}
	h := objects.NewBundleHasher()
	for _, f := range files {
		if objects.ExcludedFromBundle(f.Key) {
			continue
		}
		sum, err := export.FileSHA256(f.Path)
		if err != nil {
			return objects.BundleHash{}, err
		}
		if err := h.Add(f.Key, sum); err != nil {
			return objects.BundleHash{}, err
		}
	}
	return h.Sum()
}

func (e *env) cmdVerify(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		rep, err := r.Verify(e.ctx)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if rep.Problems == nil {
				rep.Problems = []string{}
			}
			if err := e.writeJSON(struct {
				OK       bool     `json:"ok"`
				Agents   int      `json:"agents"`
				Commits  int      `json:"commits"`
				Blocks   int      `json:"blocks"`
				Problems []string `json:"problems"`
			}{len(rep.Problems) == 0, rep.Agents, rep.Commits, rep.Blocks, rep.Problems}); err != nil {
				return err
			}
		} else {
			for _, p := range rep.Problems {
				fmt.Fprintf(e.stdout, "problem: %s\n", p)
			}
		}
		if len(rep.Problems) > 0 {
			return fmt.Errorf("verify found %d problem(s)", len(rep.Problems))
		}
		if !c.Bool("json") {
			fmt.Fprintf(e.stdout, "ok: %d agents, %d commits, %d blocks verified\n", rep.Agents, rep.Commits, rep.Blocks)
		}
		return nil
	})
}

func (e *env) cmdGC(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepo(func(r *repo.Repo) error {
		rep, err := r.GC(e.ctx, c.Bool("dry-run"))
		if err != nil {
			return err
		}
		verb := "freed"
		if c.Bool("dry-run") {
			verb = "would free"
		}
		fmt.Fprintf(e.stdout, "%s %d unreachable blocks (%d bytes); kept %d\n", verb, rep.Deleted, rep.BytesFreed, rep.Kept)
		return nil
	})
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
