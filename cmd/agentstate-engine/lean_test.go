package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLeanEngine: the engine built with the tag lean links neither
// go-ethereum nor the MCP SDK nor the page, runs commands itself, and
// hands the ones it leaves out (and help, and an unknown name) to
// agentstate-engine beside it; without that, it says what is missing.
func TestLeanEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "urfave_cli_no_docs,lean", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages: the listing is wrong", len(deps))
	}
	for _, p := range deps {
		for _, heavy := range []string{"github.com/ethereum/go-ethereum", "github.com/modelcontextprotocol/go-sdk", "github.com/agentstate/agentstate/runtime/web", "github.com/agentstate/agentstate/ens"} {
			if p == heavy || strings.HasPrefix(p, heavy+"/") {
				t.Errorf("the lean engine links %s", p)
			}
		}
	}

	dir := t.TempDir()
	build := func(name, tags string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if out, err := exec.Command("go", "build", "-tags", tags, "-o", p, ".").CombinedOutput(); err != nil {
			t.Fatalf("go build -tags %s: %v\n%s", tags, err, out)
		}
		return p
	}
	lean := build("agentstate-engine-lean", "urfave_cli_no_docs,lean")
	run := func(stdin string, args ...string) (string, string, error) {
		t.Helper()
		cmd := exec.Command(lean, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "AGENTSTATE_STORE="+filepath.Join(dir, "store"), "AGENTSTATE_NO_PAGER=1")
		cmd.Stdin = strings.NewReader(stdin)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	if _, e, err := run("", "init"); err != nil {
		t.Fatalf("init: %v\n%s", err, e)
	}
	if _, e, err := run("remembered\n", "put", "-m", "a fact", "notes.txt", "-"); err != nil {
		t.Fatalf("put: %v\n%s", err, e)
	}
	if o, e, err := run("", "log", "--oneline"); err != nil || !strings.Contains(o, "a fact") {
		t.Fatalf("log: %v %q %s", err, o, e)
	}
	// The full engine's commands, without the full engine.
	if _, e, err := run("", "serve", "--help"); err == nil || !strings.Contains(e, "agentstate-engine") {
		t.Fatalf("serve without the full engine beside: %v %q, want a failure naming agentstate-engine", err, e)
	}
	// The version, asked for with no command, is printed here (checked
	// against the full engine's below).
	version, e, err := run("", "version")
	if err != nil || !strings.HasPrefix(version, "agentstate version ") {
		t.Fatalf("version: %v %q %s", err, version, e)
	}
	versionFlags := [][]string{{"--version"}, {"-v"}, {"--store", filepath.Join(dir, "store"), "--version"}}
	leanVersion := map[string]string{}
	for _, args := range versionFlags {
		o, e, err := run("", args...)
		if err != nil || o != version {
			t.Errorf("%q without the full engine: %v, output %q (stderr %q), want the version command's %q", args, err, o, e, version)
		}
		leanVersion[strings.Join(args, " ")] = o
	}
	if _, e, err := run("", "--version", "--help"); err == nil || !strings.Contains(e, "agentstate-engine") {
		t.Errorf("--version --help without the full engine: %v %q, want the hand-over's failure (help lists every command)", err, e)
	}

	full := build("agentstate-engine", "urfave_cli_no_docs")
	for _, args := range versionFlags {
		o, err := exec.Command(full, args...).Output()
		if want := leanVersion[strings.Join(args, " ")]; err != nil || string(o) != want {
			t.Errorf("%q: the full engine printed %q (%v), the lean one %q", args, o, err, want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--help"}, "agentstate serve -"},
		{[]string{"mcp", "--help"}, "agentstate mcp -"},
		{[]string{"push", "--help"}, "agentstate push -"},
		{[]string{"restore", "--help"}, "agentstate restore -"},
		{[]string{"help"}, "serve"},
		{[]string{"--store", filepath.Join(dir, "store"), "help"}, "mcp"},
	} {
		o, e, err := run("", c.args...)
		if err != nil || !strings.Contains(o, c.want) {
			t.Errorf("%q: %v, output %q (stderr %q), want %q in it", c.args, err, o, e, c.want)
		}
	}
	if _, e, err := run("", "serv"); err == nil || !strings.Contains(e, `"serve"`) {
		t.Errorf("an unknown command: %v %q, want the full engine's suggestion of serve", err, e)
	}
	// What the lean engine has, it runs itself: with the full engine
	// gone, the log still works.
	os.Remove(filepath.Join(dir, "agentstate-engine"))
	if o, e, err := run("", "show", "HEAD:notes.txt"); err != nil || !strings.Contains(o, "remembered") {
		t.Fatalf("show: %v %q %s", err, o, e)
	}
}
