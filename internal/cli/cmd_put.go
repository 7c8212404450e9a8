package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newPutCommand(e *env) *cli.Command {
	return &cli.Command{Name: "put", Usage: "write one key (value from FILE or stdin) as a commit", ArgsUsage: "KEY [FILE|-]",
		Flags: []cli.Flag{messageFlag()}, Action: e.runPut}
}

func (e *env) runPut(c *cli.Context) error {
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
		if fi, err = os.Lstat(e.path(src)); err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", src)
		}
		if err == nil {
			data, err = os.ReadFile(e.path(src))
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
