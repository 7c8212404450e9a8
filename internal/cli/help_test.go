package cli

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Help lists every command with its usage, and a command's help every one
// of its flags, in urfave/cli's own format: nothing linked into agentstate
// (or into this test binary, which is the agentstate the scripts run) has
// rewritten the library's help globals.
func TestHelp(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(context.Background(), append([]string{"agentstate"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("agentstate %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	top := run("--help")
	e := &env{}
	for _, c := range commands(e) {
		if c.Hidden {
			if strings.Contains(top, c.Name) {
				t.Errorf("--help lists the hidden %s", c.Name)
			}
			continue
		}
		if !strings.Contains(top, "   "+c.Name+" ") || !strings.Contains(top, c.Usage) {
			t.Errorf("--help does not list %s (%q)", c.Name, c.Usage)
		}
		help := run(c.Name, "--help")
		want := "NAME:\n   agentstate " + c.Name + " - "
		if c.Name == "help" {
			want = "NAME:\n   agentstate - " // urfave/cli answers help --help as help: the commands
		}
		if !strings.HasPrefix(help, want) {
			t.Errorf("%s --help begins %q", c.Name, help[:min(len(help), 60)])
		}
		for _, f := range c.Flags {
			name := "--" + f.Names()[0]
			if len(name) == 3 {
				name = name[1:] // -n
			}
			if !strings.Contains(help, name) {
				t.Errorf("%s --help does not list %s", c.Name, name)
			}
		}
		if strings.Contains(help, "MISC") {
			t.Errorf("%s --help has a category heading:\n%s", c.Name, help)
		}
	}
	hf := cli.HelpFlag
	if w, ok := hf.(*boolNames); ok { // flagnames.go: the library's flag, its names listed once
		hf = w.BoolFlag
	}
	if bf, ok := hf.(*cli.BoolFlag); !ok || bf.Category != "" {
		t.Errorf("urfave/cli's help flag was changed: %#v", cli.HelpFlag)
	}
}

// The engine, and this package's test binary, link no package that
// rewrites urfave/cli's globals when it initialises (go-ethereum's
// internal/flags does, through its node package).
func TestNoPackageRewritesHelp(t *testing.T) {
	for _, args := range [][]string{{"list", "-deps", "../../cmd/agentstate-engine"}, {"list", "-deps", "-test", "."}} {
		out, err := exec.Command("go", args...).Output()
		if err != nil {
			t.Fatalf("go %v: %v", args, err)
		}
		for _, p := range strings.Fields(string(out)) {
			if p == "github.com/ethereum/go-ethereum/internal/flags" {
				t.Errorf("go %v: links %s", args, p)
			}
		}
	}
}

// Every command's help (and every subcommand's) has a synopsis, names each
// flag's value (never urfave/cli's placeholder "value") and ends with
// examples; every example parses: its command and flags exist.
func TestEveryCommandHelp(t *testing.T) {
	valuePlaceholder := regexp.MustCompile(`(^|[ ,])--?[a-z0-9-]+ value\b`)
	help := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(context.Background(), append(append([]string{"agentstate"}, args...), "--help"), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("agentstate %v --help: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if top := help(); valuePlaceholder.MatchString(top) {
		t.Errorf("--help has a flag whose value is named \"value\":\n%s", top)
	}
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(slices.Clone(path), c.Name)
			name := strings.Join(p, " ")
			out := help(p...)
			synopsis := "USAGE:\n   agentstate " + name
			if name == "help" {
				synopsis = "USAGE:\n   agentstate " // help --help is --help (TestHelp)
			}
			if !strings.Contains(out, synopsis) {
				t.Errorf("%s --help has no synopsis:\n%s", name, out)
			}
			if m := valuePlaceholder.FindString(out); m != "" {
				t.Errorf("%s --help names a flag's value \"value\" (%q): put its name in backquotes in the flag's Usage", name, m)
			}
			if !strings.Contains(out, "\nEXAMPLES:\n   ") || len(examples[name]) == 0 {
				t.Errorf("%s --help has no example: add one to examples (help_examples.go)", name)
			}
			for _, ex := range examples[name] {
				words := shellWords(ex)
				if words[0] != "agentstate" {
					continue // a shell line (completion)
				}
				e := &env{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
				app := newApp(e, words)
				args := reorderArgs(app, words)
				if err := app.RunContext(context.Background(), args); err != nil {
					t.Errorf("example %q does not parse: %v", ex, err)
				}
			}
			walk(p, c.Subcommands)
		}
	}
	walk(nil, commands(&env{}))
}
