package cli

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"

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
		return writeOutput(e.path(c.String("output")), e.stdout, func(w io.Writer) error {
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

// writeOutput writes what fn writes to path atomically and durably (a
// temporary file beside it, fsynced and renamed over it; mode 0600), or to
// stdout for "-". When fn fails, path is left as it was.
func writeOutput(path string, stdout io.Writer, fn func(io.Writer) error) error {
	if path == "-" {
		return writeBuffered(stdout, fn)
	}
	f, err := atomicfile.Create(filepath.Dir(path), ".agentstate-out-*", 0o600)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer f.Abort()
	if err := writeBuffered(f, fn); err != nil {
		return err
	}
	return f.Commit(path)
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
