package cli

import (
	"bytes"
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
	var in io.Reader
	if src == "" || src == "-" {
		in = e.stdin
	} else {
		f, err := e.openValueFile(src)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	msg := c.String("message")
	if msg == "" {
		msg = "put " + key
	}
	// A value up to the chunking threshold is read before the store is
	// opened and stored with the commit; a longer one streams into the
	// store as it is read, in bounded memory, and the commit follows.
	head := make([]byte, objects.ChunkThreshold+1)
	n, err := io.ReadFull(in, head)
	small := err == io.EOF || err == io.ErrUnexpectedEOF
	if err != nil && !small {
		return fmt.Errorf("reading value: %w", err)
	}
	return e.withRepo(func(r *repo.Repo) error {
		var v objects.CID
		var blocks []objects.Block
		if small {
			v, blocks = objects.NewFileValue(head[:n])
		} else {
			var err error
			if v, _, err = objects.WriteValue(e.ctx, r.Blocks, io.MultiReader(bytes.NewReader(head), readErrs{in})); err != nil {
				return err
			}
			head = nil
		}
		return e.reportEdit(r.Edit(e.ctx, repo.EditRequest{Agent: e.agent, Message: msg, Create: true, Blocks: blocks,
			Edit: func(ctx context.Context, t *objects.Tree) (bool, error) { return t.Put(ctx, key, v) }}))
	})
}

// openValueFile opens the file a value is read from, as every file a
// command line names is opened (openInput, input.go).
func (e *env) openValueFile(src string) (*os.File, error) {
	f, err := e.openInput(src, "a served store reads a stream from stdin: put KEY - < "+src)
	if err != nil {
		return nil, fmt.Errorf("reading value: %w", err)
	}
	return f, nil
}

// readErrs marks an input's errors as reading the value's, not the store's.
type readErrs struct{ r io.Reader }

func (r readErrs) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("reading value: %w", err)
	}
	return n, err
}
