package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
)

// The read commands (agents, log, show, diff, get, ls, oplog, receipts) are
// renderers of the read model (dag/inspect): each parses its command line
// into an options struct and calls runX(ctx, opts, args, out), which asks
// the read model and writes its answer, as text or as the read model's own
// JSON. runX needs no urfave/cli, so a table test calls it directly.

// readOpts is what every read command renders with: the read model of the
// repository the command reached, the agent in effect, and whether text is
// painted.
type readOpts struct {
	View  *inspect.View
	Agent string
	Color bool
	Bytes bool // sizes as exact byte counts (--bytes), not for people
	Paged bool // the output goes to a pager (env.valueLine)
}

// readOpts returns the read options of r for this command line.
func (e *env) readOpts(r *repo.Repo) readOpts {
	return readOpts{View: inspect.New(r), Agent: e.agent, Color: e.color, Bytes: e.exactBytes, Paged: e.paged}
}

// out returns an env that writes to w as o says: the printing helpers of
// the text and JSON forms.
func (o readOpts) out(ctx context.Context, w io.Writer) *env {
	return &env{ctx: ctx, stdout: w, agent: o.Agent, color: o.Color, exactBytes: o.Bytes, paged: o.Paged}
}

var changeLetter = map[objects.ChangeKind]string{objects.Added: "A", objects.Removed: "D", objects.Modified: "M"}

var changeColor = map[objects.ChangeKind]string{objects.Added: "32", objects.Removed: "31", objects.Modified: "36"}

func (e *env) printChanges(changes []inspect.Change) {
	for _, ch := range changes {
		fmt.Fprintf(e.stdout, "%s\t%s%s\n", e.paint(changeColor[ch.Change], changeLetter[ch.Change]), termsafe.Line(ch.Path), redactedNote(ch))
	}
}

// redactedNote marks a change a side of which is redacted.
func redactedNote(ch inspect.Change) string {
	switch {
	case ch.OldRedacted != nil && ch.NewRedacted != nil:
		return "\t(redacted before and after)"
	case ch.OldRedacted != nil:
		return "\t(redacted before)"
	case ch.NewRedacted != nil:
		return "\t(redacted after)"
	}
	return ""
}

// printRedactedChange says, in place of a diff, which side is redacted and
// by which record.
func (e *env) printRedactedChange(ch inspect.Change) {
	for _, side := range []struct {
		name string
		red  *inspect.Redacted
		cid  objects.CID
	}{{"old", ch.OldRedacted, ch.Old}, {"new", ch.NewRedacted, ch.New}} {
		if side.red != nil {
			fmt.Fprintf(e.stdout, "%s value %s %s\n", side.name, side.cid.Short(), termsafe.Line(side.red.String()))
		}
	}
}

// printPatch prints the read model's line diffs (changes read with patch
// asked for): a unified diff per changed text value, sizes for the others.
// The lines that name the key (those before the first hunk) are escaped
// for the terminal (termsafe.Line); the hunks are the values' content,
// printed as they are (docs/security.md).
func (e *env) printPatch(changes []inspect.Change) {
	for _, ch := range changes {
		path := termsafe.Line(ch.Path)
		fmt.Fprintln(e.stdout, e.paint("1", "diff a/"+path+" b/"+path))
		if ch.OldRedacted != nil || ch.NewRedacted != nil {
			e.printRedactedChange(ch)
			continue
		}
		if ch.Rows != nil || ch.RowsError != "" {
			e.printRows(ch) // a SQLite value, by table
			continue
		}
		if ch.Large || ch.Binary {
			fmt.Fprintf(e.stdout, "Binary or large values differ (%s -> %s)\n", e.size(int64(ch.OldSize)), e.size(int64(ch.NewSize)))
			continue
		}
		inHunks := false
		for _, line := range strings.SplitAfter(ch.Patch, "\n") {
			if line == "" {
				continue
			}
			line = strings.TrimSuffix(line, "\n")
			inHunks = inHunks || strings.HasPrefix(line, "@@")
			if !inHunks {
				line = termsafe.Line(line)
			} else {
				line = e.valueLine(line)
			}
			switch {
			case strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++"):
				line = e.paint("32", line)
			case strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "---"):
				line = e.paint("31", line)
			case strings.HasPrefix(line, "@@"):
				line = e.paint("36", line)
			}
			fmt.Fprintln(e.stdout, line)
		}
	}
}
