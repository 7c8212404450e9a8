package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/urfave/cli/v2"
)

func (e *env) cmdInit(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	dir := e.storeFlag
	if dir == "" {
		dir = repo.DirName
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(abs, "MANIFEST")); err == nil {
		return fmt.Errorf("a store already exists at %s", abs)
	}
	r, err := repo.Init(abs, repo.Options{})
	if err != nil {
		return err
	}
	if err := r.Close(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Initialized empty agentstate store in %s\n", abs)
	return nil
}

func parseMeta(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--meta %q: want KEY=VALUE", kv)
		}
		m[k] = v
	}
	return m, nil
}

func (e *env) cmdCommit(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	meta, err := parseMeta(c.StringSlice("meta"))
	if err != nil {
		return err
	}
	dir := c.Args().First()
	return e.withRepo(func(r *repo.Repo) error {
		res, err := export.ImportDir(e.ctx, r.Blocks, dir, export.ImportOptions{Cache: r.StatCache()})
		if err != nil {
			return err
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(e.stderr, "agentstate: skipped %s: %s\n", s.Path, s.Reason)
		}
		tree := res.Tree
		return e.finishCommit(r, repo.CommitRequest{Agent: e.agent, Tree: tree, Message: c.String("message"),
			Metadata: meta, AllowEmpty: c.Bool("allow-empty")})
	})
}

// finishCommit records a commit and prints its CID, or says nothing changed.
func (e *env) finishCommit(r *repo.Repo, req repo.CommitRequest) error {
	id, _, err := r.CommitTree(e.ctx, req)
	if errors.Is(err, repo.ErrNoChange) {
		fmt.Fprintf(e.stderr, "nothing changed; HEAD of %s stays at %s\n", req.Agent, id.Short())
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, id)
	return nil
}

// reportEdit prints the commit an edit made, or says nothing changed.
func (e *env) reportEdit(id objects.CID, err error) error {
	if errors.Is(err, repo.ErrNoChange) {
		fmt.Fprintf(e.stderr, "nothing changed; HEAD of %s stays at %s\n", e.agent, id.Short())
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, id)
	return nil
}

func (e *env) cmdPut(c *cli.Context) error {
	if err := nargs(c, 1, 2); err != nil {
		return err
	}
	key := c.Args().Get(0)
	if err := objects.ValidateKey(key); err != nil {
		return err
	}
	src := c.Args().Get(1)
	var data []byte
	var err error
	if src == "" || src == "-" {
		data, err = io.ReadAll(e.stdin)
	} else {
		var fi os.FileInfo
		if fi, err = os.Lstat(src); err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", src)
		}
		if err == nil {
			data, err = os.ReadFile(src)
		}
	}
	if err != nil {
		return fmt.Errorf("reading value: %w", err)
	}
	msg := c.String("message")
	if msg == "" {
		msg = "put " + key
	}
	return e.withRepo(func(r *repo.Repo) error {
		v, blocks := objects.NewFileValue(data)
		return e.reportEdit(r.Edit(e.ctx, repo.EditRequest{Agent: e.agent, Message: msg, Create: true, Blocks: blocks,
			Edit: func(ctx context.Context, t *objects.Tree) (bool, error) { return t.Put(ctx, key, v) }}))
	})
}

func (e *env) cmdRm(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	key := c.Args().First()
	if err := objects.ValidateKey(key); err != nil {
		return err
	}
	msg := c.String("message")
	if msg == "" {
		msg = "rm " + key
	}
	return e.withRepo(func(r *repo.Repo) error {
		return e.reportEdit(r.Edit(e.ctx, repo.EditRequest{Agent: e.agent, Message: msg,
			Edit: func(ctx context.Context, t *objects.Tree) (bool, error) {
				ok, err := t.Delete(ctx, key)
				if err == nil && !ok {
					return false, fmt.Errorf("key %q is not in HEAD of %s", key, e.agent)
				}
				return ok, err
			}}))
	})
}

func (e *env) cmdReset(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	return e.withRepo(func(r *repo.Repo) error {
		if _, err := r.Refs.Head(e.ctx, e.agent); err != nil {
			return err
		}
		target, err := r.Resolve(e.ctx, e.agent, c.Args().First())
		if err != nil {
			return err
		}
		_, err = r.Reset(e.ctx, e.agent, target)
		if errors.Is(err, repo.ErrNoChange) {
			fmt.Fprintf(e.stderr, "HEAD of %s is already at %s\n", e.agent, target.Short())
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "HEAD of %s is now at %s\n", e.agent, target.Short())
		return nil
	})
}

func (e *env) undoRedo(redo bool) error {
	return e.withRepo(func(r *repo.Repo) error {
		do, verb := r.Undo, "undid"
		if redo {
			do, verb = r.Redo, "redid"
		}
		u, err := do(e.ctx, e.agent)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s operation %d (%s); HEAD of %s is now at %s\n", verb, u.Target.Seq, u.Target.Op, e.agent, u.Entry.New.Short())
		return nil
	})
}

func (e *env) cmdUndo(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.undoRedo(false)
}

func (e *env) cmdRedo(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.undoRedo(true)
}

func (e *env) cmdFork(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	name := c.Args().First()
	if err := refs.ValidateAgent(name); err != nil {
		return err
	}
	return e.withRepo(func(r *repo.Repo) error {
		from, err := r.Resolve(e.ctx, e.agent, c.String("from"))
		if err != nil {
			return err
		}
		if _, err := r.Fork(e.ctx, e.agent, from, name); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "forked %s at %s into %s\n", e.agent, from.Short(), name)
		return nil
	})
}

func (e *env) cmdCheckout(c *cli.Context) error {
	if err := nargs(c, 2, 2); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		id, cm, err := r.ResolveCommit(e.ctx, e.agent, c.Args().Get(0))
		if err != nil {
			return err
		}
		dir := c.Args().Get(1)
		if abs, _ := filepath.Abs(dir); abs == r.Dir || strings.HasPrefix(abs, r.Dir+string(filepath.Separator)) {
			return fmt.Errorf("refusing to check out into %s: it is inside the store", dir)
		}
		rep, err := export.Checkout(e.ctx, r.Blocks, cm.Tree, dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "checked out %s into %s: %d written, %d unchanged, %d removed\n", id.Short(), dir, rep.Written, rep.Unchanged, rep.Removed)
		return nil
	})
}
