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

// openValueFile opens the file a value is read from. A command running in
// the user's own process reads what the user could: a regular file, or a
// stream (a pipe or FIFO, as with put KEY <(cmd); a character device, as
// /dev/stdin on a terminal), named directly or through a symlink. A
// directory, a socket or a block device is refused. A server running a
// client's command opens only a regular file that is not a symlink: there
// /dev/fd/N or /dev/stdin would name the server's own descriptors, not the
// client's (the client's stdin reaches the server as "-").
func (e *env) openValueFile(src string) (*os.File, error) {
	path := e.path(src)
	ok := func(m os.FileMode) bool {
		if e.served != nil {
			return m.IsRegular()
		}
		return m.IsRegular() || m&os.ModeNamedPipe != 0 || m&os.ModeCharDevice != 0
	}
	stat := os.Stat
	if e.served != nil {
		stat = os.Lstat
	}
	refused := func() error {
		if e.served != nil {
			return fmt.Errorf("%s is not a regular file (a served store reads a stream from stdin: put KEY - < %s)", src, src)
		}
		return fmt.Errorf("%s is not a regular file or a stream", src)
	}
	fi, err := stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading value: %w", err)
	}
	if !ok(fi.Mode()) {
		return nil, refused()
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading value: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !ok(fi.Mode()) {
		f.Close()
		return nil, refused()
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
