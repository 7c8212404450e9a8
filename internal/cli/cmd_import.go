package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/internal/progress"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/urfave/cli/v2"
)

func newImportCommand(e *env) *cli.Command {
	return &cli.Command{Name: "import", Usage: "commit a tar as the agent's next state, or bring in a CAR's history (fast-forward or merge)", ArgsUsage: "FILE.tar|FILE.car|-",
		Flags: []cli.Flag{
			messageFlag(),
			&cli.BoolFlag{Name: "skip-unsupported", Usage: "skip (and report) links and devices instead of refusing the tar"},
			&cli.BoolFlag{Name: "ff-only", Usage: "CAR: refuse to merge, only a fast-forward"},
		}, Action: e.runImport}
}

func (e *env) runImport(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	var in io.Reader = e.stdin
	if src := c.Args().First(); src != "-" {
		f, err := e.openInput(src, "import - < "+src)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	// Progress: the bytes read, of the file's size when it has one.
	size := int64(-1)
	if f, ok := in.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if pc := progress.Start(e.ctx, size); pc != nil {
		in = countingReader{in, pc}
	}
	br := bufio.NewReaderSize(in, 1<<20)
	if isCAR(br) {
		return e.importCAR(c, br)
	}
	return e.withRepo(func(r *repo.Repo) error {
		imp, err := snapshot.ReadTar(e.ctx, br, r.Blocks, c.Bool("skip-unsupported"))
		if err != nil {
			return fmt.Errorf("importing %s (nothing was committed): %w", c.Args().First(), err)
		}
		for _, s := range imp.Skipped {
			fmt.Fprintf(e.stderr, "agentstate: skipped %s: %s\n", termsafe.Line(s.Path), termsafe.Line(fmt.Sprint(s.Type)))
		}
		if imp.Lock != nil {
			if err := imp.CheckLineage(nil); err != nil {
				fmt.Fprintf(e.stderr, "agentstate: note: %v\n", err)
			}
		}
		msg := c.String("message")
		if msg == "" {
			msg = "import " + filepath.Base(c.Args().First())
		}
		return e.finishCommit(r, repo.CommitRequest{Agent: e.agent, Tree: imp.Tree, Message: msg, Op: refs.OpImport})
	})
}

// isCAR tells a CARv1 file from a tar by its first bytes: a CAR starts with
// the varint length of its header and the header's DAG-CBOR map (0xa2, two
// pairs); a tar starts with a file name.
func isCAR(br *bufio.Reader) bool {
	b, _ := br.Peek(3)
	return len(b) == 3 && b[0] > 0 && b[0] < 0x80 && b[1] == 0xa2
}

// importCAR reads a CAR's blocks into the store (every block re-hashed,
// canonical form checked, every link present in the CAR or the store) and
// moves the agent's HEAD onto its root as a pull does.
func (e *env) importCAR(c *cli.Context, br *bufio.Reader) error {
	name := c.Args().First()
	return e.withRepo(func(r *repo.Repo) error {
		imp, err := snapshot.ReadCAR(e.ctx, br, r.Blocks, snapshot.CAROptions{Redactions: func(lines [][]byte) (func(v, c objects.CID) bool, error) {
			return r.JudgeRedactions(e.ctx, lines)
		}})
		if err != nil {
			return fmt.Errorf("importing %s (HEAD did not move): %w", name, err)
		}
		added, err := r.AddRedactions(e.ctx, imp.Redactions)
		if err != nil {
			return fmt.Errorf("importing %s (its blocks are stored; HEAD did not move): %w", name, err)
		}
		if added.Added > 0 {
			fmt.Fprintf(e.stdout, "%s: %d redaction record(s) taken; %d block(s) of this store's removed\n", e.agent, added.Added, added.Removed)
		}
		in, err := r.Integrate(e.ctx, e.agent, imp.Root, c.Bool("ff-only"), refs.OpImport, "import "+filepath.Base(name))
		if err != nil {
			return fmt.Errorf("importing %s (its blocks are stored; HEAD did not move): %w", name, err)
		}
		fmt.Fprintf(e.stdout, "%s: %s at %s (%d blocks, %d new)\n", e.agent, in.Outcome, in.To.Short(), imp.Blocks, imp.New)
		return nil
	})
}
