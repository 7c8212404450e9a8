// Package termsafe makes text read from a store inert on a terminal.
//
// Commit messages, metadata, agent and tag names, receipt fields and
// operation-log notes come from whoever wrote the store: an agent through
// MCP, a pulled, imported or restored history. Printed raw, an ESC starts a
// terminal escape sequence (colours, cursor moves, a window title, OSC 52
// writing the clipboard), a CR overwrites what a line showed, a C1 control
// (U+009B is CSI) does what ESC does on some terminals, and bidirectional
// controls reorder what a line reads. Line and Text replace each such
// character with a visible escape: "\x1b", "\r", "\n", "\u009b",
// "\u202e", and "\xff" for a byte that is not UTF-8. Tabs are kept. Text
// that holds none of them is returned as it is, without copying.
package termsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Line escapes s for one line of output: newlines are escaped too.
func Line(s string) string { return escape(s, false) }

// Text escapes s for output that may span lines (a commit message's body):
// newlines are kept, everything else Line escapes is escaped.
func Text(s string) string { return escape(s, true) }

// unsafe reports whether r must be escaped (newline aside).
func unsafe(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional controls
	case r == 0x2028, r == 0x2029:
		return true // line and paragraph separators
	}
	return false
}

// JSON escapes, in encoded JSON, the characters encoding/json writes as
// they are but a terminal acts on: DEL, C1 controls (U+0080–U+009F) and
// bidirectional controls become \u escapes, which mean the same to a JSON
// reader. (encoding/json already escapes the other C0 controls, U+2028,
// U+2029 and invalid UTF-8.) Outside strings JSON holds only ASCII, so the
// replacement is exact anywhere in the text.
func JSON(b []byte) []byte {
	if clean(string(b), true) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if n > 0 && (r == 0x7f || r >= 0x80 && unsafe(r)) {
			out = append(out, `\u`...)
			h := strconv.FormatInt(int64(r), 16)
			out = append(out, strings.Repeat("0", 4-len(h))...)
			out = append(out, h...)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

func clean(s string, keepNL bool) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b < 0x7f {
			continue
		}
		if b == '\t' || b == '\n' && keepNL {
			continue
		}
		if b < 0x80 {
			return false
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || unsafe(r) {
			return false
		}
		i += n - 1
	}
	return true
}

func escape(s string, keepNL bool) string {
	if clean(s, keepNL) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case r == '\n' && keepNL:
			b.WriteByte('\n')
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unsafe(r):
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case unsafe(r):
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)))
			b.WriteString(h)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}
