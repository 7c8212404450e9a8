package cli

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/walrus"
)

func TestCheckArgCount(t *testing.T) {
	tests := []struct {
		name, argsUsage string
		n, min, max     int
		want            string // "" for no error
	}{
		{"get", "KEY", 1, 1, 1, ""},
		{"get", "KEY", 0, 1, 1, "get: takes 1 argument(s), got 0 (usage: agentstate get KEY)"},
		{"get", "KEY", 2, 1, 1, "get: takes 1 argument(s), got 2 (usage: agentstate get KEY)"},
		{"diff", "REV [REV2]", 2, 1, 2, ""},
		{"diff", "REV [REV2]", 3, 1, 2, "diff: takes 1 to 2 argument(s), got 3 (usage: agentstate diff REV [REV2])"},
		{"verify", " ", 0, 0, 0, ""},
		{"verify", " ", 1, 0, 0, "verify: takes 0 argument(s), got 1 (usage: agentstate verify)"},
		{"many", "ARG...", 5, 1, -1, ""},
		{"many", "ARG...", 0, 1, -1, "many: takes at least 1 argument(s), got 0 (usage: agentstate many ARG...)"},
	}
	for _, tt := range tests {
		err := checkArgCount(tt.name, tt.argsUsage, tt.n, tt.min, tt.max)
		if tt.want == "" {
			if err != nil {
				t.Errorf("checkArgCount(%q, %d, %d..%d) = %v, want nil", tt.name, tt.n, tt.min, tt.max, err)
			}
			continue
		}
		var ue *usageError
		if !errors.As(err, &ue) || err.Error() != tt.want {
			t.Errorf("checkArgCount(%q, %d, %d..%d) = %v, want usage error %q", tt.name, tt.n, tt.min, tt.max, err, tt.want)
		}
	}
}

func TestParseMeta(t *testing.T) {
	tests := []struct {
		in      []string
		want    map[string]string
		wantErr string
	}{
		{in: nil, want: nil},
		{in: []string{"task=t1"}, want: map[string]string{"task": "t1"}},
		{in: []string{"k="}, want: map[string]string{"k": ""}},
		{in: []string{"eq=a=b"}, want: map[string]string{"eq": "a=b"}},
		{in: []string{"k=1", "k=2", "j=x"}, want: map[string]string{"k": "2", "j": "x"}},
		{in: []string{"novalue"}, wantErr: `--meta "novalue": want KEY=VALUE`},
		{in: []string{"=v"}, wantErr: `--meta "=v": want KEY=VALUE`},
		{in: []string{"ok=1", ""}, wantErr: `--meta "": want KEY=VALUE`},
	}
	for _, tt := range tests {
		got, err := parseMeta(tt.in)
		if tt.wantErr != "" {
			var ue *usageError
			if !errors.As(err, &ue) || err.Error() != tt.wantErr {
				t.Errorf("parseMeta(%q) = %v, %v; want usage error %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("parseMeta(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseLockTimeout(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string // substring
	}{
		{"", 0, ""}, // unset: the store's default
		{"10s", 10 * time.Second, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{"2", 2 * time.Second, ""},
		{"1.5", 1500 * time.Millisecond, ""},
		{"0", -1, ""},  // fail at once
		{"0s", -1, ""}, // fail at once
		{"-1s", 0, "must not be negative"},
		{"-3", 0, "must not be negative"},
		{"soon", 0, "want a duration"},
		{"NaN", 0, "want a duration"},
		{"1e300", 0, "too long"},
		{"Inf", 0, "too long"},
		{"-Inf", 0, "must not be negative"},
	}
	for _, tt := range tests {
		got, err := parseLockTimeout(tt.in)
		if tt.wantErr != "" {
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "AGENTSTATE_LOCK_TIMEOUT") {
				t.Errorf("parseLockTimeout(%q) = %v, %v; want usage error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseLockTimeout(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestRestoreOptions(t *testing.T) {
	blob := strings.Repeat("A", walrus.BlobIDLen)
	hash := "0x" + strings.Repeat("ab", 32)
	tests := []struct {
		blob, expect string
		wantUsage    bool // the error is a usage error (exit 2)
		wantErr      bool
	}{
		{"", "", false, false},
		{blob, "", false, false},
		{"", hash, false, false},
		{blob, hash, false, false},
		{"short", "", false, true}, // a bad blob id is a plain failure, as before
		{"", "ab" + hash[2:], true, true},
		{"", "0x1234", true, true},
	}
	for _, tt := range tests {
		opts, err := restoreOptions(tt.blob, tt.expect)
		if (err != nil) != tt.wantErr {
			t.Errorf("restoreOptions(%q, %q) error = %v, want error %v", tt.blob, tt.expect, err, tt.wantErr)
			continue
		}
		var ue *usageError
		if err != nil {
			if errors.As(err, &ue) != tt.wantUsage {
				t.Errorf("restoreOptions(%q, %q) = %v: usage error %v, want %v", tt.blob, tt.expect, err, !tt.wantUsage, tt.wantUsage)
			}
			continue
		}
		if string(opts.BlobID) != tt.blob {
			t.Errorf("restoreOptions(%q, %q).BlobID = %q", tt.blob, tt.expect, opts.BlobID)
		}
		if (opts.Expect != nil) != (tt.expect != "") || (opts.Expect != nil && opts.Expect.String() != tt.expect) {
			t.Errorf("restoreOptions(%q, %q).Expect = %v", tt.blob, tt.expect, opts.Expect)
		}
	}
}
