package termsafe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapes(t *testing.T) {
	for _, c := range []struct{ in, line, text string }{
		{"plain text, ünïcode ✓\ttab", "plain text, ünïcode ✓\ttab", "plain text, ünïcode ✓\ttab"},
		{"a\nb", `a\nb`, "a\nb"},
		{"\x1b]52;c;aGVsbG8=\x07", `\x1b]52;c;aGVsbG8=\x07`, `\x1b]52;c;aGVsbG8=\x07`},
		{"\x1b[2J\x1b]0;title\x1b\\", `\x1b[2J\x1b]0;title\x1b\`, `\x1b[2J\x1b]0;title\x1b\`},
		{"ok\rforged", `ok\rforged`, `ok\rforged`},
		{"\u009b31m", `\u009b31m`, `\u009b31m`},
		{"\x9b", `\x9b`, `\x9b`}, // a lone C1 byte is not UTF-8
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"abc\u202egnp.exe", `abc\u202egnp.exe`, `abc\u202egnp.exe`},
		{"x\u2028y", `x\u2028y`, `x\u2028y`},
		{"bad\xff\xfe", `bad\xff\xfe`, `bad\xff\xfe`},
	} {
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

// encoding/json writes DEL, C1 and bidi controls as they are; JSON
// escapes them, and the result decodes to the same value.
func TestJSON(t *testing.T) {
	msg := "a\x1b b\u0080\u009b c\u202e d\x7f\u2028\t e"
	enc, err := json.Marshal(map[string]string{"m": msg})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(enc), "\u009b") {
		t.Fatalf("encoding/json escapes C1 now (%q): JSON may be unneeded", enc)
	}
	got := JSON(enc)
	for _, r := range string(got) {
		if unsafe(r) {
			t.Fatalf("JSON(%q) = %q holds %U", enc, got, r)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["m"] != msg {
		t.Fatalf("JSON(%q) = %q decodes to %q, %v", enc, got, back["m"], err)
	}
	if !strings.Contains(string(got), `\u009b`) || !strings.Contains(string(got), `\u007f`) {
		t.Fatalf("JSON(%q) = %q", enc, got)
	}
}

// Whatever the input, the output holds no control character but tab (and
// newline in Text) and is valid UTF-8.
func FuzzInert(f *testing.F) {
	f.Add("\x1b]52;c;x\x07\r\u009b\xff\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Line(s), Text(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("%q: output %q is not UTF-8", s, out)
			}
			for _, r := range out {
				if r != '\n' && unsafe(r) {
					t.Fatalf("%q: output %q holds %U", s, out, r)
				}
			}
		}
		for _, r := range Line(s) {
			if r == '\n' {
				t.Fatalf("Line(%q) holds a newline", s)
			}
		}
	})
}
