package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newSQLCommand(e *env) *cli.Command {
	return &cli.Command{Name: "sql", Usage: "run a read-only query against a SQLite value at a revision, straight from the store", ArgsUsage: "[REV:]KEY QUERY",
		Flags: []cli.Flag{
			jsonFlag(),
			&cli.BoolFlag{Name: "header", Usage: "print the column names first (list mode)"},
			&cli.IntFlag{Name: "max-rows", Value: sqlitedb.DefaultMaxRows, Usage: "fail after printing `N` rows when the query has more"},
			&cli.DurationFlag{Name: "timeout", Value: sqlitedb.DefaultTimeout, Usage: "interrupt the query after `DURATION`"},
		},
		Action: e.sqlAction}
}

type sqlOptions struct {
	readOpts
	JSON    bool
	Header  bool
	MaxRows int
	Timeout time.Duration
}

func (e *env) sqlAction(c *cli.Context) error {
	if err := nargs(c, 2, 2); err != nil {
		return err
	}
	o := sqlOptions{JSON: c.Bool("json"), Header: c.Bool("header"), MaxRows: c.Int("max-rows"), Timeout: c.Duration("timeout")}
	return e.withRepoRead(func(r *repo.Repo) error {
		o.readOpts = e.readOpts(r)
		return runSQL(e.ctx, o, c.Args().Slice(), e.stdout)
	})
}

// runSQL renders the read model's inspect.View.SQL of [REV:]KEY and QUERY:
// sqlite3's list mode (columns separated by '|', NULL empty, a real with 15
// significant digits, no header unless --header), or with --json an array
// of one object per row, column name to typed value. A query with more
// rows than --max-rows prints the first of them and fails.
func runSQL(ctx context.Context, o sqlOptions, args []string, out io.Writer) error {
	if len(args) != 2 {
		return usagef("sql: takes 2 arguments, [REV:]KEY QUERY, got %d", len(args))
	}
	if o.MaxRows < 1 {
		return usagef("sql: --max-rows must be at least 1, got %d", o.MaxRows)
	}
	if o.Timeout <= 0 {
		return usagef("sql: --timeout must be positive, got %s", o.Timeout)
	}
	rev, key := splitRevKey(args[0])
	if err := objects.ValidateKey(key); err != nil {
		return err
	}
	res, err := o.View.SQL(ctx, o.Agent, rev, key, args[1], inspect.SQLLimits{MaxRows: o.MaxRows, Timeout: o.Timeout})
	if err != nil {
		return err
	}
	if o.JSON {
		if err := o.out(ctx, out).writeJSON(sqlObjects(res)); err != nil {
			return err
		}
	} else {
		w := bufio.NewWriter(out)
		if o.Header && len(res.Columns) > 0 {
			fmt.Fprintln(w, strings.Join(res.Columns, "|"))
		}
		for _, row := range res.Rows {
			for i, c := range row {
				if i > 0 {
					w.WriteByte('|')
				}
				w.WriteString(c.String())
			}
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if res.Truncated {
		return fmt.Errorf("sql: the query returned more than %d rows; the first %d are printed (raise --max-rows, or add LIMIT)", o.MaxRows, o.MaxRows)
	}
	return nil
}

// sqlObjects is a result as JSON objects, one per row, keys in column order.
type sqlObjects inspect.SQLResult

func (r sqlObjects) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, row := range r.Rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		for j, c := range row {
			if j > 0 {
				b.WriteByte(',')
			}
			k, err := json.Marshal(r.Columns[j])
			if err != nil {
				return nil, err
			}
			v, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			b.Write(k)
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}
