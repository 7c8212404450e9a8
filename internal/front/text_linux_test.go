package front

import (
	"slices"
	"strings"
	"testing"
)

// The front end's string helpers do what package strings does.
func TestTextHelpersMatchStrings(t *testing.T) {
	inputs := []string{"", "a", ":", "::", "a:b", ":a:", "a::b", "/usr/bin:/bin:", "key=value=more", "=", "--store=x", "-"}
	for _, s := range inputs {
		for _, sep := range []byte{':', '=', '/', 0} {
			if got, want := split(s, sep), strings.Split(s, string(sep)); !slices.Equal(got, want) {
				t.Errorf("split(%q, %q) = %q, want %q", s, sep, got, want)
			}
			b, a, f := cut(s, sep)
			wb, wa, wf := strings.Cut(s, string(sep))
			if b != wb || a != wa || f != wf {
				t.Errorf("cut(%q, %q) = %q %q %v, want %q %q %v", s, sep, b, a, f, wb, wa, wf)
			}
			if got, want := indexByte(s, sep), strings.IndexByte(s, sep); got != want {
				t.Errorf("indexByte(%q, %q) = %d, want %d", s, sep, got, want)
			}
		}
		for _, p := range []string{"", "-", "--", "a", "/"} {
			if got, want := hasPrefix(s, p), strings.HasPrefix(s, p); got != want {
				t.Errorf("hasPrefix(%q, %q) = %v, want %v", s, p, got, want)
			}
		}
	}
}
