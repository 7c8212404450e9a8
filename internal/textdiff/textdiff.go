// Package textdiff renders line-based unified diffs of two texts (Myers'
// O(ND) algorithm), for `agentstate diff -p` and `show -p`.
package textdiff

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// IsText reports whether data looks like text: valid UTF-8 without NUL bytes.
func IsText(data []byte) bool { return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0 }

type op struct {
	kind byte // ' ', '-', '+'
	line string
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// MaxCost bounds the edit distance (lines removed plus lines added) a
// shortest edit script is searched to. Myers' search keeps one row of 2d+1
// positions per step d, so memory is about MaxCost² positions (16 MiB of
// int32) and time (len(a)+len(b))·MaxCost at most, whatever the inputs'
// sizes; two texts further apart than that get the script that keeps the
// lines they share at the start and at the end and replaces everything
// between: correct (it turns a into b), not the shortest.
const MaxCost = 2048

// edits computes a shortest edit script from a to b, or, past MaxCost,
// the bounded one (see MaxCost).
func edits(a, b []string) []op {
	n, m := len(a), len(b)
	if n+m == 0 {
		return nil
	}
	max := n + m
	v := make([]int, 2*max+2)
	var trace [][]int32 // trace[d]: v[-d..d] as step d began
	off := max + 1
	for d := 0; d <= max; d++ {
		if d > MaxCost {
			return replaceMiddle(a, b)
		}
		snap := make([]int32, 2*d+1)
		for i := range snap {
			snap[i] = int32(v[off-d+i])
		}
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, d)
			}
		}
	}
	return nil
}

// replaceMiddle is the script that keeps a's and b's common first and last
// lines and replaces the rest.
func replaceMiddle(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]op, 0, len(a)+len(b)-pre-suf)
	for _, l := range a[:pre] {
		out = append(out, op{' ', l})
	}
	for _, l := range a[pre : len(a)-suf] {
		out = append(out, op{'-', l})
	}
	for _, l := range b[pre : len(b)-suf] {
		out = append(out, op{'+', l})
	}
	for _, l := range a[len(a)-suf:] {
		out = append(out, op{' ', l})
	}
	return out
}

func backtrack(trace [][]int32, a, b []string, d int) []op {
	x, y := len(a), len(b)
	var out []op
	for ; d > 0; d-- {
		row := trace[d]
		v := func(k int) int { return int(row[k+d]) }
		k := x - y
		var pk int
		if k == -d || (k != d && v(k-1) < v(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := v(pk)
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			out = append(out, op{' ', a[x]})
		}
		if x == px {
			y--
			out = append(out, op{'+', b[y]})
		} else {
			x--
			out = append(out, op{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		out = append(out, op{' ', a[x]})
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Unified returns the unified diff of a and b with the given context lines,
// headed by "--- oldName" / "+++ newName"; "" when they are equal.
func Unified(oldName, newName, a, b string, context int) string {
	ops := edits(splitLines(a), splitLines(b))
	changed := false
	for _, o := range ops {
		if o.kind != ' ' {
			changed = true
			break
		}
	}
	if !changed {
		return ""
	}
	var buf strings.Builder
	fmt.Fprintf(&buf, "--- %s\n+++ %s\n", oldName, newName)
	// Group ops into hunks separated by more than 2*context unchanged lines.
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i >= len(ops) {
			break
		}
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run-end > 2*context || run == len(ops) {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		// Line numbers of the hunk start.
		aLine, bLine := 1, 1
		for _, o := range ops[:start] {
			if o.kind != '+' {
				aLine++
			}
			if o.kind != '-' {
				bLine++
			}
		}
		aCount, bCount := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aCount++
			}
			if o.kind != '-' {
				bCount++
			}
		}
		if aCount == 0 {
			aLine--
		}
		if bCount == 0 {
			bLine--
		}
		fmt.Fprintf(&buf, "@@ -%d,%d +%d,%d @@\n", aLine, aCount, bLine, bCount)
		for _, o := range ops[start:end] {
			buf.WriteByte(o.kind)
			buf.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				buf.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return buf.String()
}

// Lines splits s into lines, each with its "\n" (the last may lack it).
func Lines(s string) []string { return splitLines(s) }

// Matches maps each line of b to the line of a it is kept from in a
// shortest edit script from a to b (the one Unified prints, after the
// lines both share at the start and at the end), or to -1 for a line the
// script adds.
func Matches(a, b []string) []int {
	out := make([]int, len(b))
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		out[pre] = pre
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		out[len(b)-1-suf] = len(a) - 1 - suf
		suf++
	}
	x, y := pre, pre
	for _, o := range edits(a[pre:len(a)-suf], b[pre:len(b)-suf]) {
		switch o.kind {
		case ' ':
			out[y] = x
			x, y = x+1, y+1
		case '-':
			x++
		case '+':
			out[y] = -1
			y++
		}
	}
	return out
}
