package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// hostileMessage is what an agent can write through MCP put, or any pulled,
// imported or restored history can carry: an OSC 52 clipboard write, a
// window title, a CR that overwrites the line, a CSI (C1), a bidi override
// and a DEL. (A byte that is not UTF-8 is refused in a commit
// message; termsafe's own tests cover it.)
const hostileMessage = "fix\x1b]52;c;cm0gLXJmIH4=\x07 done\rFORGED\x1b]0;pwned\x1b\\ \u009b2J \u202eevil\x7f\nsecond\x1b[31m line"

// rawControl returns the first control byte or sequence a terminal would act
// on in out, ignoring tabs and newlines.
func rawControl(out string) (string, bool) {
	for i, r := range out {
		switch {
		case r == '\t' || r == '\n':
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(out[i:]); n <= 1 {
				return out[i:min(i+8, len(out))], true
			}
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e:
			return out[i:min(i+8, len(out))], true
		}
	}
	return "", false
}

// Text from a store is inert on a terminal: log, log --oneline, show,
// oplog and ls print a hostile message, metadata and key with every control
// character escaped, and --json escapes them as JSON does (the message
// round-trips).
func TestStoreTextIsInertOnATerminal(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := objects.NewValue([]byte("x"))
	_, err = r.Edit(ctx, repo.EditRequest{Agent: "a", Message: hostileMessage, Create: true, Blocks: []objects.Block{v},
		Metadata: map[string]string{"tool\x1b[8m": "v\x1b]52;c;eA==\x07\r", "op": "put"},
		Edit:     func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, "notes/n.md", v.CID) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"log"}, {"log", "--oneline"}, {"show", "HEAD"}, {"oplog"}, {"ls"}, {"show", "--patch", "HEAD"}} {
		code, out, stderr := runCLI(t, append([]string{"--store", dir, "--agent", "a"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if seq, ok := rawControl(out); ok {
			t.Errorf("%v prints a raw control sequence %q:\n%s", args, seq, out)
		}
		if args[0] == "log" && !strings.Contains(out, `fix\x1b]52;c;cm0gLXJmIH4=\x07 done\rFORGED`) {
			t.Errorf("%v does not show the escaped message:\n%s", args, out)
		}
		if args[0] == "show" && !strings.Contains(out, `tool\x1b[8m: v\x1b]52;c;eA==\x07\r`) {
			t.Errorf("%v does not show the escaped metadata:\n%s", args, out)
		}
	}
	for _, args := range [][]string{{"log", "--json"}, {"show", "--json", "HEAD"}} {
		code, out, stderr := runCLI(t, append([]string{"--store", dir, "--agent", "a"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if seq, ok := rawControl(out); ok {
			t.Errorf("%v prints a raw control sequence %q", args, seq)
		}
		var got struct {
			Message  string            `json:"message"`
			Metadata map[string]string `json:"metadata"`
		}
		data := []byte(out)
		if args[0] == "log" {
			var list []json.RawMessage
			if err := json.Unmarshal(data, &list); err != nil || len(list) != 1 {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			data = list[0]
		} else {
			var shown struct {
				Commit json.RawMessage `json:"commit"`
			}
			if err := json.Unmarshal(data, &shown); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			data = shown.Commit
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		// JSON keeps the text.
		if got.Message != hostileMessage || got.Metadata["tool\x1b[8m"] != "v\x1b]52;c;eA==\x07\r" {
			t.Errorf("%v: message %q metadata %q", args, got.Message, got.Metadata)
		}
	}
}
