package objects_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

func TestValidateKey(t *testing.T) {
	seg255 := strings.Repeat("s", 255)
	long := strings.Repeat("abcdefghi/", 409) + "abcde" // 4095 bytes
	tests := []struct {
		key  string
		why  string // a substring of the error; "" when the key is valid
		safe bool   // the error message must print no raw control byte
	}{
		{key: "skills/a.md"},
		{key: "MEMORY.md"},
		{key: "ü/ß/日本.md"},
		{key: "a b/c-d_e.f"},
		{key: `a\b`},
		{key: "..a/a.."},
		{key: ".hidden/x"},
		{key: "a/.agentstate/x"},      // only the top-level name is reserved
		{key: ".agentstates/x"},       // a different name
		{key: "bundle.lock.json"},     // valid; Tree.Put refuses it as derived
		{key: "receipts.ndjson"},      // likewise
		{key: "a/bundle.lock.json/x"}, // only the top-level name is derived
		{key: "bundle.lock.json.d/x"}, // a different name
		{key: "tab\u00a0nbsp"},        // U+00A0 is not a control character
		{key: seg255},                 // NAME_MAX
		{key: "d/" + seg255 + "/" + seg255},
		{key: long}, // PATH_MAX-1

		{key: "", why: "empty key"},
		{key: "/etc/passwd", why: "absolute path"},
		{key: "a/", why: "trailing '/'"},
		{key: "a//b", why: "empty path segment"},
		{key: "./a", why: "'.' path segment"},
		{key: "a/../b", why: "'..' path segment"},
		{key: "..", why: "'..' path segment"},
		{key: ".agentstate", why: "reserved for the agentstate store"},
		{key: ".agentstate/MANIFEST", why: "reserved for the agentstate store"},
		{key: ".agentstate/config.json", why: "reserved for the agentstate store"},
		{key: ".AgentState/MANIFEST", why: "reserved"}, // case-insensitive file systems
		{key: "bundle.lock.json/x", why: "bundle.lock.json is a derived file"},
		{key: "receipts.ndjson/a/b", why: "receipts.ndjson is a derived file"},
		{key: "a\x00b", why: "control character 0x00 at byte 1", safe: true},
		{key: "a\x1b[2Jb", why: "control character 0x1b at byte 1", safe: true},
		{key: "ding\a", why: "control character 0x07 at byte 4", safe: true},
		{key: "fake\ncommit", why: "control character 0x0a", safe: true},
		{key: "cr\r", why: "control character 0x0d", safe: true},
		{key: "tab\tb", why: "control character 0x09", safe: true},
		{key: "del\x7f", why: "control character 0x7f", safe: true},
		{key: "c1\u0080", why: "control character U+0080", safe: true},
		{key: "csi\u009b2J", why: "control character U+009B", safe: true},
		{key: "c1\u009f", why: "control character U+009F", safe: true},
		{key: "evil\u202etxt.md", why: "U+202E at byte 4", safe: true},
		{key: "iso\u2066x\u2069", why: "U+2066 at byte 3", safe: true},
		{key: "line\u2028break", why: "U+2028 at byte 4", safe: true},
		{key: "lrm\u200e", why: "U+200E at byte 3", safe: true},
		{key: "bad\xffutf8", why: "not valid UTF-8 (byte 3)", safe: true},
		{key: "a\xc2", why: "not valid UTF-8", safe: true}, // truncated sequence
		{key: "\xc2\x9b", why: "control character U+009B", safe: true},
		{key: seg255 + "s", why: "path segment of 256 bytes; at most 255"},
		{key: "d/" + seg255 + "x.md", why: "path segment of 259 bytes"},
		{key: long + "e", why: "longer than 4095 bytes"},
	}
	for _, tt := range tests {
		err := objects.ValidateKey(tt.key)
		if tt.why == "" {
			if err != nil {
				t.Errorf("ValidateKey(%q) = %v, want nil", tt.key, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("ValidateKey(%q) = nil, want an error about %q", tt.key, tt.why)
			continue
		}
		if !errors.Is(err, objects.ErrBadKey) {
			t.Errorf("ValidateKey(%q) = %v, does not match ErrBadKey", tt.key, err)
		}
		var ke *objects.KeyError
		if !errors.As(err, &ke) {
			t.Errorf("ValidateKey(%q) = %T, want *KeyError", tt.key, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.why) {
			t.Errorf("ValidateKey(%q) = %q, want it to say %q", tt.key, msg, tt.why)
		}
		if tt.safe && strings.ContainsFunc(msg, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0xfffd }) {
			t.Errorf("ValidateKey(%q): error %q holds a raw control or invalid byte", tt.key, msg)
		}
	}
}
