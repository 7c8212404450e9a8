package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/internal/termsafe"
)

// rowLogOptions are log --row's.
type rowLogOptions struct {
	readOpts
	Rev, Key, Row string
	N             int // at most N versions; < 0 is all
	JSON          bool
}

// runLogRow renders the read model's row history (inspect.View.RowHistory;
// --json is its inspect.RowHistory): one entry per commit that inserted,
// changed or deleted the row, newest first, with its task and the row's
// values (an update: the changed columns, old -> new).
func runLogRow(ctx context.Context, o rowLogOptions, out io.Writer) error {
	limit := o.N
	if limit == 0 {
		limit = -1
	}
	h, err := o.View.RowHistory(ctx, o.Agent, o.Rev, o.Key, o.Row, max(limit, 0))
	if err != nil {
		return err
	}
	if o.N == 0 {
		h.Versions = h.Versions[:0]
	}
	e := o.out(ctx, out)
	if o.JSON {
		return e.writeJSON(h)
	}
	for _, rv := range h.Versions {
		task := rv.Task
		if task == "" {
			task = "-"
		}
		mark := ""
		if rv.Boundary {
			mark = " (history cut below: the row may be older)"
		}
		fmt.Fprintf(out, "%s %s %s %s %s%s\n", e.paint("33", rv.Commit.Short()), rv.Change, termsafe.Line(task), fmtTime(rv.Time), termsafe.Line(firstLine(rv.Message)), mark)
		switch rv.Change {
		case "insert":
			fmt.Fprintf(out, "    %s\n", cellsText(rv.Columns, rv.Values))
		case "delete":
			fmt.Fprintf(out, "    %s\n", cellsText(rv.Columns, rv.Old))
		default:
			oldCols := rv.OldColumns
			if oldCols == nil {
				oldCols = rv.Columns
			}
			var parts []string
			for _, c := range rv.Changed {
				was, now := "(none)", "(none)"
				if i := slices.Index(oldCols, c); i >= 0 {
					was = cellText(rv.Old[i])
				}
				if i := slices.Index(rv.Columns, c); i >= 0 {
					now = cellText(rv.Values[i])
				}
				parts = append(parts, termsafe.Line(c)+": "+was+" -> "+now)
			}
			fmt.Fprintf(out, "    %s\n", strings.Join(parts, ", "))
		}
	}
	if len(h.Versions) == 0 {
		fmt.Fprintf(out, "no commit changed row %s of %s\n", termsafe.Line(o.Row), termsafe.Line(o.Key))
	}
	return nil
}
