package sqlitedb

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"zombiezen.com/go/sqlite"
)

// Kind is the storage class of a value SQLite returned.
type Kind uint8

// The storage classes.
const (
	Null Kind = iota
	Integer
	Real
	Text
	Blob
)

func (k Kind) String() string {
	switch k {
	case Integer:
		return "integer"
	case Real:
		return "real"
	case Text:
		return "text"
	case Blob:
		return "blob"
	}
	return "null"
}

// Cell is one value of a result row, typed as SQLite returned it.
//
// In JSON a cell is: null; an integer as a JSON number (all its digits);
// a real as a JSON number with a point or an exponent (1.0, 2.5, 1e+300;
// an infinite one as the string "Inf" or "-Inf");
// text as a JSON string; a blob as {"base64": "<standard base64>"}.
type Cell struct {
	Kind Kind
	Int  int64
	Real float64
	Text string // Text
	Blob []byte // Blob
}

// MarshalJSON writes the cell as the type's doc says.
func (c Cell) MarshalJSON() ([]byte, error) {
	switch c.Kind {
	case Integer:
		return strconv.AppendInt(nil, c.Int, 10), nil
	case Real:
		switch {
		case math.IsInf(c.Real, 1):
			return []byte(`"Inf"`), nil
		case math.IsInf(c.Real, -1):
			return []byte(`"-Inf"`), nil
		case math.IsNaN(c.Real):
			return []byte("null"), nil
		}
		b := strconv.AppendFloat(nil, c.Real, 'g', -1, 64)
		if !strings.ContainsAny(string(b), ".e") {
			b = append(b, ".0"...) // a real stays a real: 1.0, not 1
		}
		return b, nil
	case Text:
		return json.Marshal(c.Text)
	case Blob:
		return json.Marshal(struct {
			Base64 string `json:"base64"`
		}{base64.StdEncoding.EncodeToString(c.Blob)})
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads what MarshalJSON writes. A JSON string is text (so a
// real written as "Inf" reads back as the text "Inf"); a number with a
// point or an exponent is a real.
func (c *Cell) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return fmt.Errorf("sqlitedb: an empty cell")
	case string(b) == "null":
		*c = Cell{Kind: Null}
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Cell{Kind: Text, Text: s}
	case b[0] == '{':
		var o struct {
			Base64 *string `json:"base64"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		if o.Base64 == nil {
			return fmt.Errorf("sqlitedb: a cell object without base64")
		}
		data, err := base64.StdEncoding.DecodeString(*o.Base64)
		if err != nil {
			return fmt.Errorf("sqlitedb: a blob cell: %w", err)
		}
		*c = Cell{Kind: Blob, Blob: data}
	case bytes.ContainsAny(b, ".eE"):
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return fmt.Errorf("sqlitedb: a real cell %s: %w", b, err)
		}
		*c = Cell{Kind: Real, Real: f}
	default:
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return fmt.Errorf("sqlitedb: an integer cell %s: %w", b, err)
		}
		*c = Cell{Kind: Integer, Int: n}
	}
	return nil
}

// String renders the cell as sqlite3's list mode does: NULL as the empty
// string, a real with up to 15 significant digits ("%!.15g"), text and blob
// bytes as they are up to the first NUL byte (the shell prints them as C
// strings; JSON keeps every byte).
func (c Cell) String() string {
	switch c.Kind {
	case Integer:
		return strconv.FormatInt(c.Int, 10)
	case Real:
		return FormatReal(c.Real)
	case Text:
		if i := strings.IndexByte(c.Text, 0); i >= 0 {
			return c.Text[:i]
		}
		return c.Text
	case Blob:
		if i := bytes.IndexByte(c.Blob, 0); i >= 0 {
			return string(c.Blob[:i])
		}
		return string(c.Blob)
	}
	return ""
}

// FormatReal formats a real as sqlite3's shell prints it (printf "%!.15g":
// 15 significant digits, and always a decimal point or exponent).
func FormatReal(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	s := strconv.FormatFloat(f, 'g', 15, 64)
	// %g drops trailing zeros; SQLite's %!g keeps one digit after the point.
	mant, exp := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' {
			mant, exp = s[:i], s[i:]
			break
		}
	}
	hasPoint := false
	for i := 0; i < len(mant); i++ {
		if mant[i] == '.' {
			hasPoint = true
		}
	}
	if !hasPoint {
		mant += ".0"
	}
	if exp != "" {
		// Go writes e+06; SQLite writes e+06 as well (two digits at least).
		return mant + exp
	}
	return mant
}

// Limits bound one query. Zero fields take the defaults.
type Limits struct {
	MaxRows  int           // rows returned at most (DefaultMaxRows)
	Timeout  time.Duration // time the query may run (DefaultTimeout)
	MaxBytes int           // text and blob bytes a result holds at most (DefaultMaxBytes)
}

// Defaults of Limits.
const (
	DefaultMaxRows  = 10000
	DefaultTimeout  = 10 * time.Second
	DefaultMaxBytes = 64 << 20
)

// Result is the outcome of one query.
type Result struct {
	Columns []string `json:"columns"`
	Rows    [][]Cell `json:"rows"`
	// Truncated: the query had more rows than Limits.MaxRows; Rows holds
	// the first MaxRows of them.
	Truncated bool `json:"truncated,omitempty"`
}

// Query runs one statement (a query or a read-only PRAGMA) with limits. A
// statement that would write, attach, load an extension or change a setting
// gets an error wrapping ErrRefused, and so does a second statement after the
// first; one that runs past the time limit is interrupted and gets
// ErrTimeout. More rows than the limit is not an error: Result.Truncated
// says so.
func (d *DB) Query(ctx context.Context, query string, lim Limits) (*Result, error) {
	if lim.MaxRows <= 0 {
		lim.MaxRows = DefaultMaxRows
	}
	if lim.Timeout <= 0 {
		lim.Timeout = DefaultTimeout
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	// One query at a time on the shared connection.
	d.qmu.Lock()
	defer d.qmu.Unlock()
	d.mu.Lock()
	c, lent := d.conn, d.lent
	d.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("%w: the database is closed", ErrQuery)
	}
	if lent { // a Conn holds it: this query has a connection of its own
		var err error
		if c, err = d.open(ctx); err != nil {
			return nil, err
		}
		defer c.Close()
	}
	c.SetInterrupt(ctx.Done())
	defer c.SetInterrupt(nil)
	res, err := runQuery(c, query, lim)
	if err != nil {
		return nil, d.classify(ctx, err)
	}
	return res, nil
}

// runQuery prepares and steps one statement on c.
func runQuery(c *sqlite.Conn, query string, lim Limits) (*Result, error) {
	st, trailing, err := c.PrepareTransient(query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("%w: no statement to run", ErrQuery)
	}
	defer st.Finalize()
	if rest := query[len(query)-trailing:]; !onlySpace(rest) {
		return nil, fmt.Errorf("%w: one statement at a time (more follows the first: %q)", ErrRefused, clip(strings.TrimSpace(rest), 40))
	}
	n := st.ColumnCount()
	res := &Result{Columns: make([]string, n), Rows: [][]Cell{}}
	for i := range n {
		res.Columns[i] = st.ColumnName(i)
	}
	size := 0
	for {
		ok, err := st.Step()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if len(res.Rows) == lim.MaxRows {
			res.Truncated = true
			break
		}
		row := make([]Cell, n)
		for i := range n {
			row[i] = cellAt(st, i)
			size += len(row[i].Text) + len(row[i].Blob)
		}
		if size > lim.MaxBytes {
			return nil, fmt.Errorf("%w: the result passed %d bytes of text and blobs at row %d (ask for fewer rows or columns)", ErrTooLarge, lim.MaxBytes, len(res.Rows)+1)
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

func cellAt(st *sqlite.Stmt, i int) Cell {
	switch st.ColumnType(i) {
	case sqlite.TypeInteger:
		return Cell{Kind: Integer, Int: st.ColumnInt64(i)}
	case sqlite.TypeFloat:
		return Cell{Kind: Real, Real: st.ColumnFloat(i)}
	case sqlite.TypeText:
		return Cell{Kind: Text, Text: st.ColumnText(i)}
	case sqlite.TypeBlob:
		b := make([]byte, st.ColumnLen(i))
		st.ColumnBytes(i, b)
		return Cell{Kind: Blob, Blob: b}
	}
	return Cell{Kind: Null}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// onlySpace reports whether s holds nothing but white space, semicolons and
// SQL comments.
func onlySpace(s string) bool {
	for i := 0; i < len(s); {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == ';':
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return true
			}
			i += j + 1
		case strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return true // an unterminated comment runs to the end
			}
			i += 2 + j + 2
		default:
			return false
		}
	}
	return true
}
