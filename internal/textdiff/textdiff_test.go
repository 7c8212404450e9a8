package textdiff

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestUnifiedAgreesWithPatch(t *testing.T) {
	cases := [][2]string{
		{"a\nb\nc\n", "a\nB\nc\n"},
		{"", "new\nfile\n"},
		{"gone\n", ""},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\n2\nx\n4\n5\n6\n7\n8\n9\n10\ny\n12\n13\n"},
		{"no newline", "no newline at all"},
		{"same\n", "same\n"},
		// Further apart than MaxCost: the middle replaced, still a diff
		// patch applies.
		{"head\n" + numbered("a", MaxCost) + "tail\n", "head\n" + numbered("b", MaxCost) + "tail\n"},
	}
	patch, err := exec.LookPath("patch")
	for i, c := range cases {
		d := Unified("a/f", "b/f", c[0], c[1], 3)
		if c[0] == c[1] {
			if d != "" {
				t.Fatalf("case %d: diff of equal texts: %q", i, d)
			}
			continue
		}
		if !strings.HasPrefix(d, "--- a/f\n+++ b/f\n@@ ") {
			t.Fatalf("case %d: %q", i, d)
		}
		if err != nil {
			continue // no patch(1): the shape checks above still ran
		}
		dir := t.TempDir()
		f := filepath.Join(dir, "f")
		os.WriteFile(f, []byte(c[0]), 0o644)
		cmd := exec.Command(patch, "-s", f)
		cmd.Stdin = strings.NewReader(d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("case %d: patch refused our diff: %v\n%s\n%s", i, err, out, d)
		}
		got, _ := os.ReadFile(f)
		if string(got) != c[1] {
			t.Fatalf("case %d: patch gave %q, want %q\n%s", i, got, c[1], d)
		}
	}
}

func TestIsText(t *testing.T) {
	if !IsText([]byte("héllo\n")) || IsText([]byte{0, 1}) || IsText([]byte{0xff}) {
		t.Fatal("IsText")
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want []int
	}{
		{"", "x\n", []int{-1}},
		{"x\n", "", []int{}},
		{"a\nb\nc\n", "a\nb\nc\n", []int{0, 1, 2}},
		{"a\nb\nc\n", "a\nB\nc\n", []int{0, -1, 2}},
		{"a\nb\nc\n", "z\na\nc\nd\n", []int{-1, 0, 2, -1}},
		{"a\nb", "a\nb\n", []int{0, -1}}, // a last line without its newline is another line
		{"1\n2\n3\n4\n", "0\n1\n3\n4\n5\n", []int{-1, 0, 2, 3, -1}},
	} {
		got := Matches(Lines(tc.a), Lines(tc.b))
		if !slices.Equal(got, tc.want) {
			t.Errorf("Matches(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s%d\n", prefix, i)
	}
	return b.String()
}

// Two texts of 1 MiB (the largest diff -p, the page and MCP diff, and
// blame read) with no line in common but the first and the last: the
// search stops at MaxCost, so it allocates a bounded amount (it tried
// gigabytes before), and the script keeps the common lines and replaces
// the rest.
func TestFarApartTextsBounded(t *testing.T) {
	n := (1 << 20) / 8
	a := Lines("first\n" + numbered("aaaa", n) + "last\n")
	b := Lines("first\n" + numbered("bbbb", n) + "last\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m := Matches(a, b)
	d := Unified("a/f", "b/f", strings.Join(a, ""), strings.Join(b, ""), 3)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d lines each: %d MiB allocated", len(a), alloc>>20)
	if alloc > 256<<20 {
		t.Fatalf("diffing two 1 MiB texts allocated %d MiB", alloc>>20)
	}
	if m[0] != 0 || m[len(m)-1] != len(a)-1 || slices.ContainsFunc(m[1:len(m)-1], func(i int) bool { return i >= 0 }) {
		t.Fatalf("matches of far-apart texts: first %d, last %d", m[0], m[len(m)-1])
	}
	if want := fmt.Sprintf("@@ -1,%d +1,%d @@\n first\n-aaaa0\n", n+2, n+2); !strings.Contains(d, want) {
		t.Fatalf("unified diff of far-apart texts begins %q", d[:min(len(d), 80)])
	}
}
