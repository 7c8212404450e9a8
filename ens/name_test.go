package ens

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/crypto"
)

func TestNamehashKnownAnswers(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"", "0000000000000000000000000000000000000000000000000000000000000000"},
		{"eth", "93cdeb708b7545dc668eb9280176169d1c33cfd8ed6f04690a0bcc88a93fc4ae"},
		{"foo.eth", "de9b09fd7c5f901e23a3f19fecc54828e9c848539801e86591bd9801b019f84f"},
	} {
		got := Namehash(tc.name)
		if hex.EncodeToString(got[:]) != tc.want {
			t.Errorf("Namehash(%q) = %x, want %s", tc.name, got, tc.want)
		}
	}
}

// recursiveNamehash is EIP-137's definition written independently, with
// go-ethereum's keccak, to check Namehash on names the KATs do not cover.
func recursiveNamehash(name string) [32]byte {
	if name == "" {
		return [32]byte{}
	}
	label, rest, _ := strings.Cut(name, ".")
	parent := recursiveNamehash(rest)
	var out [32]byte
	copy(out[:], crypto.Keccak256(parent[:], crypto.Keccak256([]byte(label))))
	return out
}

func TestNamehashMatchesDefinition(t *testing.T) {
	for _, name := range []string{
		"eth", "foo.eth", "lumen.eth", "a.b.c.d.eth", "agent-snapshot.lumen.eth",
		"raffy🚴\u200d♂.eth", "ß.eth", "_a.eth", "x",
	} {
		if got, want := Namehash(name), recursiveNamehash(name); got != want {
			t.Errorf("Namehash(%q) = %x, definition gives %x", name, got, want)
		}
	}
	// Different names, different nodes; the hash is of labels, not of the string.
	if Namehash("a.bc") == Namehash("ab.c") {
		t.Error("Namehash(a.bc) == Namehash(ab.c)")
	}
}

func TestNormalize(t *testing.T) {
	ok := []struct{ in, want string }{
		{"", ""}, // ENSIP-15: the empty name is the root
		{"vitalik.eth", "vitalik.eth"},
		{"bRAnTlY.eTh", "brantly.eth"},
		{"Lumen.ETH", "lumen.eth"},
		{"_a", "_a"},
		{"__a.eth", "__a.eth"},
		{"a--b", "a--b"},
		{"-a-.eth", "-a-.eth"},
		{"$.eth", "$.eth"},
		{"ＡＢＣ.eth", "abc.eth"},        // fullwidth Latin maps to ASCII
		{"ß.eth", "ß.eth"},            // ENSIP-15 keeps ß (no UTS-46 deviation mapping)
		{"e\u0301.eth", "\u00e9.eth"}, // NFC composes
		{"a\ufe0fb", "ab"},            // FE0F is ignored
		{"ⓐⓑ.eth", "ab.eth"},          // circled letters map
		{"abc\u2010def", "abc-def"},   // hyphen U+2010 maps to ASCII hyphen
		{"a'b", "a\u2019b"},           // apostrophe maps to U+2019
		{"ΞΞΞ.eth", "ξξξ.eth"},        // Greek lowercases
		{"ℓ.eth", "l.eth"},            // compatibility mapping
		{"😀.eth", "😀.eth"},            // emoji
		{"RaFFY🚴\u200d♂\ufe0f.eTh", "raffy🚴\u200d♂.eth"}, // emoji ZWJ sequence, FE0F dropped
	}
	for _, tc := range ok {
		got, err := Normalize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		if again, err := Normalize(got); err != nil || again != got {
			t.Errorf("Normalize not idempotent on %q: %q, %v", got, again, err)
		}
	}

	bad := []struct {
		in     string
		reason string // the ENSIP-15 rule the error reports
	}{
		{" ", "disallowed character"},
		{"a b.eth", "disallowed character"},
		{"a\x00b", "disallowed character"},
		{"\xff.eth", "disallowed character"}, // invalid UTF-8
		{"a\u200db", "disallowed character"}, // ZWJ outside an emoji
		{"a\u200cb", "disallowed character"},
		{"a.eth\u3002x", "disallowed character"}, // ideographic full stop is no separator
		{".", "empty label"},
		{".eth", "empty label"},
		{"eth.", "empty label"},
		{"...eth", "empty label"},
		{"a..eth", "empty label"},
		{"a_", "underscore allowed only at start"},
		{"a_b.eth", "underscore allowed only at start"},
		{"ab--cd", "invalid label extension"},
		{"xn--abc.eth", "invalid label extension"},
		{"\u0435th\u0435r\u0435um.eth", "illegal mixture"}, // Cyrillic е among Latin
		{"\u043e.eth", "whole-script confusable"},          // Cyrillic о alone
		{"аррӏе.eth", "whole-script confusable"},
		{"İ.eth", "illegal mixture"},
	}
	for _, tc := range bad {
		got, err := Normalize(tc.in)
		if err == nil {
			t.Errorf("Normalize(%q) = %q, want error", tc.in, got)
			continue
		}
		if !errors.Is(err, ErrInvalidName) {
			t.Errorf("Normalize(%q) error %v does not match ErrInvalidName", tc.in, err)
		}
		if !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("Normalize(%q) error %q does not report %q", tc.in, err, tc.reason)
		}
		var e *Error
		if !errors.As(err, &e) || e.Name != tc.in {
			t.Errorf("Normalize(%q) error %v does not name the input", tc.in, err)
		}
	}
}

// TestNormalizeConformance runs the ENSIP-15 validation suite shipped with the
// normaliser module (ensip15/tests.json) through Normalize.
func TestNormalizeConformance(t *testing.T) {
	const mod = "github.com/adraffy/go-ens-normalize"
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
	if err != nil {
		t.Fatalf("locate %s with go list: %v", mod, err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "ensip15", "tests.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read ENSIP-15 validation tests: %v", err)
	}
	var tests []struct {
		Name  string  `json:"name"`
		Norm  *string `json:"norm"`
		Error bool    `json:"error"`
	}
	if err := json.Unmarshal(raw, &tests); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if len(tests) < 1000 {
		t.Fatalf("only %d validation tests in %s", len(tests), path)
	}
	var failed, errs int
	for _, tc := range tests {
		want := tc.Name
		if tc.Norm != nil {
			want = *tc.Norm
		}
		got, err := Normalize(tc.Name)
		switch {
		case tc.Error && err == nil:
			failed++
			t.Errorf("Normalize(%+q) = %+q, want error", tc.Name, got)
		case !tc.Error && err != nil:
			failed++
			t.Errorf("Normalize(%+q): %v", tc.Name, err)
		case !tc.Error && got != want:
			failed++
			t.Errorf("Normalize(%+q) = %+q, want %+q", tc.Name, got, want)
		case tc.Error:
			errs++
			if !errors.Is(err, ErrInvalidName) {
				t.Errorf("Normalize(%+q) error %v does not match ErrInvalidName", tc.Name, err)
			}
		}
		if failed > 20 {
			t.Fatal("too many failures")
		}
	}
	t.Logf("%d ENSIP-15 validation tests, %d expected errors", len(tests), errs)
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"", "eth", "Lumen.ETH", "foo.eth", "a_", "_a", "ab--cd", ".", "a..b",
		"RaFFY🚴\u200d♂\ufe0f.eTh", "e\u0301", "\u0435th", "ＡＢＣ", "a\x00", "\xff\xfe",
		"1⃣2⃣.eth", "a\u0300\u0300\u0300", "ξ.eth", "💩💩.eth", "\u200d", "\ufe0f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		norm, err := Normalize(name)
		_ = Namehash(name) // never panics, whatever the input
		if err != nil {
			if !errors.Is(err, ErrInvalidName) {
				t.Fatalf("Normalize(%+q): error %v does not match ErrInvalidName", name, err)
			}
			return
		}
		if !utf8.ValidString(norm) {
			t.Fatalf("Normalize(%+q) = %+q: invalid UTF-8", name, norm)
		}
		if strings.ContainsAny(norm, "ABCDEFGHIJKLMNOPQRSTUVWXYZ \x00") {
			t.Fatalf("Normalize(%+q) = %+q: upper case, space or NUL left", name, norm)
		}
		if norm != "" && (strings.HasPrefix(norm, ".") || strings.HasSuffix(norm, ".") || strings.Contains(norm, "..")) {
			t.Fatalf("Normalize(%+q) = %+q: empty label", name, norm)
		}
		again, err := Normalize(norm)
		if err != nil || again != norm {
			t.Fatalf("not idempotent: Normalize(%+q) = %+q, then %+q, %v", name, norm, again, err)
		}
		if Namehash(norm) != recursiveNamehash(norm) {
			t.Fatalf("Namehash(%+q) disagrees with the EIP-137 definition", norm)
		}
	})
}

func BenchmarkNamehash(b *testing.B) {
	name := "agent-snapshot.lumen.eth"
	b.ReportAllocs()
	b.SetBytes(int64(len(name)))
	for b.Loop() {
		_ = Namehash(name)
	}
}

func BenchmarkNormalize(b *testing.B) {
	name := "Lumen-Agent.ETH"
	b.ReportAllocs()
	b.SetBytes(int64(len(name)))
	for b.Loop() {
		if _, err := Normalize(name); err != nil {
			b.Fatal(err)
		}
	}
}
