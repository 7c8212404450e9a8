package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/internal/atomicfile"
	"github.com/agentstate/agentstate/internal/progress"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newExportCommand(e *env) *cli.Command {
	return &cli.Command{Name: "export", Usage: "write REV (default HEAD) as a deterministic tar or a CARv1 file", ArgsUsage: "[REV]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "tar", Usage: "`FORMAT`: tar or car"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output `FILE` (- for stdout)", Required: true},
			&cli.BoolFlag{Name: "receipts", Usage: "include the agent's receipts.ndjson in the tar"},
		}, Action: e.runExport}
}

func (e *env) runExport(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	format := c.String("format")
	if format != "tar" && format != "car" {
		return usagef("--format %q: want tar or car", format)
	}
	rev := revArg(c, 0)
	return e.withRepoRead(func(r *repo.Repo) error {
		id, cm, err := r.ResolveCommit(e.ctx, e.agent, rev)
		if err != nil {
			return err
		}
		return e.writeOutput(c.String("output"), func(w io.Writer) error {
			if pc := progress.Start(e.ctx, -1); pc != nil {
				w = countingWriter{w, pc} // progress: the bytes written
			}
			if format == "car" {
				lo, _, err := r.LogOptions(e.ctx, e.agent)
				if err != nil {
					return err
				}
				// Redacted blocks are left out and the records that name
				// them go in, so an importer that trusts their signer
				// takes the history (docs/format.md §10).
				absent, err := r.JudgeRedactions(e.ctx, nil)
				if err != nil {
					return err
				}
				lines, err := r.RedactionLines(e.ctx, "")
				if err != nil {
					return err
				}
				st, err := snapshot.WriteCARWith(e.ctx, w, r.Blocks, id, snapshot.CARWriteOptions{Cut: lo.Cut, Absent: absent, Redactions: lines})
				if err == nil {
					fmt.Fprintf(e.stderr, "exported %s as CAR: %d blocks, %d bytes\n", id.Short(), st.Blocks, st.Bytes)
				}
				return err
			}
			var receipts []byte
			if c.Bool("receipts") {
				if receipts, err = r.Tape.NDJSON(e.ctx, e.agent); err != nil {
					return err
				}
			}
			h, err := r.BundleHash(e.ctx, cm.Tree)
			if err != nil {
				return err
			}
			// A tar holds content: a redacted value has none, and no
			// placeholder would hash to the bundle hash, so it is refused.
			if red, err := inspect.New(r).Redacted(e.ctx, id); err != nil {
				return err
			} else if len(red) > 0 {
				return fmt.Errorf("export: %s holds %d redacted value(s) (%s, ...): a tar must hold every value's content to match its bundle hash; export --format car leaves them out with their records", id.Short(), len(red), termsafe.Line(red[0]))
			}
			st, err := snapshot.WriteTar(e.ctx, w, r.Blocks, cm.Tree, h, receipts)
			if err == nil {
				fmt.Fprintf(e.stderr, "exported %s as tar: %d files, %d bytes\n", id.Short(), st.Files, st.TarBytes)
			}
			return err
		})
	})
}

// writeOutput writes what fn writes to the file a command line names
// (relative to the command's directory), under one rule, the output side
// of openInput's. "-" is stdout. A regular file, or a path that does not
// exist, is replaced atomically and durably (a temporary file beside it,
// fsynced and renamed over it; mode 0600): when fn fails, it is left as it
// was. In the user's own process an existing stream (a FIFO, a character
// device such as /dev/null or /dev/stdout), named directly or through a
// symlink, is written into, as a shell's redirection would: there is
// nothing to replace. A directory, a socket or a block device is refused.
// A server running a client's command writes only by replacement, never
// into a stream or a device (they would be the server's own: /dev/stdout,
// a FIFO nobody reads would hold the server), and never under /dev or /proc.
func (e *env) writeOutput(dst string, fn func(io.Writer) error) error {
	if dst == "-" {
		return writeBuffered(e.stdout, fn)
	}
	path := e.path(dst)
	refused := func(what string) error {
		if e.served != nil {
			return fmt.Errorf("%s is %s: a served store's server writes only a regular file a client names (or - for stdout)", dst, what)
		}
		return fmt.Errorf("%s is %s: not a regular file or a stream to write", dst, what)
	}
	if e.served != nil && (strings.HasPrefix(path, "/dev/") || strings.HasPrefix(path, "/proc/")) {
		return refused("under /dev or /proc")
	}
	if fi, err := os.Stat(path); err == nil {
		m := fi.Mode()
		switch {
		case m.IsRegular():
		case e.served == nil && (m&os.ModeNamedPipe != 0 || m&os.ModeCharDevice != 0):
			return writeStream(path, fn)
		default:
			return refused(atomicfile.Kind(m))
		}
	}
	f, err := atomicfile.Create(filepath.Dir(path), ".agentstate-out-*", 0o600)
	if err != nil {
		return fmt.Errorf("creating %s: %w", dst, err)
	}
	defer f.Abort()
	if err := writeBuffered(f, fn); err != nil {
		return err
	}
	return f.Commit(path)
}

// writeStream writes what fn writes into the FIFO or device at path,
// opened for writing as it is (no creation, no truncation); it checks
// again, on what it opened, that it is one.
func writeStream(path string, fn func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
		return fmt.Errorf("%s changed while it was opened: not a FIFO or a character device", path)
	}
	if err := writeBuffered(f, fn); err != nil {
		return err
	}
	return f.Close()
}

// writeBuffered runs fn on a 1 MiB buffer in front of w and flushes it.
// A write as long as the buffer goes to w directly, after what the buffer
// holds, rather than being copied through it (a tar's large values).
func writeBuffered(w io.Writer, fn func(io.Writer) error) error {
	bw := passWriter{bufio.NewWriterSize(w, 1<<20), w}
	if err := fn(bw); err != nil {
		return err
	}
	return bw.Flush()
}

type passWriter struct {
	*bufio.Writer
	w io.Writer
}

func (p passWriter) Write(b []byte) (int, error) {
	if len(b) < p.Size() {
		return p.Writer.Write(b)
	}
	if err := p.Flush(); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}
