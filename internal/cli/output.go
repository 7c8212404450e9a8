package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/internal/termsafe"
	"golang.org/x/term"
)

// writeJSON prints v as indented JSON. encoding/json escapes C0 controls;
// termsafe.JSON escapes what it leaves raw (DEL, C1, bidi controls), so
// --json output is as inert on a terminal as text output.
func (e *env) writeJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := e.stdout.Write(termsafe.JSON(buf.Bytes()))
	return err
}

func (e *env) paint(code, s string) string {
	if !e.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func fmtTime(t int64) string { return time.Unix(t, 0).UTC().Format(inspect.TimeLayout) }

// firstLine is the first line of a message, escaped for a terminal
// (termsafe.Line).
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return termsafe.Line(s)
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func (e *env) printCommit(c inspect.Commit, d *inspect.Decoration) {
	hdr := "commit " + c.CID.String()
	if s := e.decoration(d); s != "" {
		hdr += " " + s
	}
	fmt.Fprintln(e.stdout, e.paint("33", hdr))
	if len(c.Parents) > 1 {
		var ps []string
		for _, p := range c.Parents {
			ps = append(ps, p.Short())
		}
		fmt.Fprintf(e.stdout, "Merge:  %s\n", strings.Join(ps, " "))
	}
	fmt.Fprintf(e.stdout, "Date:   %s\n", fmtTime(c.Time))
	for _, k := range sortedKeys(c.Metadata) {
		fmt.Fprintf(e.stdout, "%-7s %s\n", termsafe.Line(k)+":", termsafe.Line(c.Metadata[k]))
	}
	fmt.Fprintln(e.stdout)
	for _, line := range strings.Split(c.Message, "\n") {
		fmt.Fprintf(e.stdout, "    %s\n", termsafe.Line(line))
	}
}

// size is a byte count for people (powers of 1024: 7 B, 2.9 MiB), or with
// --bytes the exact count.
func (e *env) size(n int64) string {
	if e.exactBytes {
		return fmt.Sprint(n)
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// decoration is a commit's names in a log, as git prints them: "(HEAD ->
// lumen, tag: release, nova)"; "" for none.
func (e *env) decoration(d *inspect.Decoration) string {
	if d == nil {
		return ""
	}
	var names []string
	if d.Head {
		names = append(names, "HEAD -> "+termsafe.Line(e.agent))
	}
	for _, t := range d.Tags {
		names = append(names, "tag: "+termsafe.Line(t))
	}
	for _, a := range d.Agents {
		names = append(names, termsafe.Line(a))
	}
	if len(names) == 0 {
		return ""
	}
	return "(" + strings.Join(names, ", ") + ")"
}

// headOnly is the decoration of a commit that is or is not HEAD, for a
// command that reads no others.
func headOnly(head bool) *inspect.Decoration {
	if !head {
		return nil
	}
	return &inspect.Decoration{Head: true}
}
