package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/urfave/cli/v2"
)

// completion SHELL prints a script that completes agentstate's command
// lines in bash, zsh or fish. The scripts are thin: each hands the command
// line up to the cursor to the hidden __complete, which knows the commands
// and flags (from their definitions) and asks the read model for agents,
// revisions and keys, and prints one candidate a line. The scripts never
// evaluate a candidate: bash quotes each with printf %q, zsh's compadd and
// fish quote what they insert.
func newCompletionCommand(e *env) *cli.Command {
	return &cli.Command{Name: "completion", Usage: "print a shell completion script (bash, zsh or fish)", ArgsUsage: "SHELL",
		Description: "bash: source <(agentstate completion bash)\n" +
			"zsh:  source <(agentstate completion zsh)\n" +
			"fish: agentstate completion fish | source",
		Action: func(c *cli.Context) error {
			if err := nargs(c, 1, 1); err != nil {
				return err
			}
			script, ok := completionScripts[c.Args().First()]
			if !ok {
				return usagef("completion: no script for %q (bash, zsh or fish)", c.Args().First())
			}
			_, err := fmt.Fprint(e.stdout, script)
			return err
		}}
}

var completionScripts = map[string]string{
	"bash": `# agentstate completion for bash: source <(agentstate completion bash)
_agentstate() {
    local word=${COMP_WORDS[COMP_CWORD]} c q
    COMPREPLY=()
    while IFS= read -r c; do
        printf -v q '%q' "$c"
        COMPREPLY+=("$q")
    done < <(agentstate __complete --word "$word" --line "${COMP_LINE:0:COMP_POINT}" 2>/dev/null)
}
complete -o default -F _agentstate agentstate
`,
	"zsh": `#compdef agentstate
# agentstate completion for zsh: source <(agentstate completion zsh)
_agentstate() {
    local -a cands
    cands=("${(@f)$(agentstate __complete --line "$LBUFFER" 2>/dev/null)}")
    cands=(${cands:#})
    if (( ${#cands} )); then
        compadd -- "${cands[@]}"
    else
        _files
    fi
}
if (( $+functions[compdef] )); then
    compdef _agentstate agentstate
fi
`,
	"fish": `# agentstate completion for fish: agentstate completion fish | source
function __agentstate_complete
    agentstate __complete --line (commandline -cp) 2>/dev/null
end
complete -c agentstate -a '(__agentstate_complete)'
`,
}

// __complete --line LINE [--word WORD]: the candidates for the last word of
// LINE (the command line up to the cursor; "" after a space), one a line.
// WORD is the part of that word the shell replaces (bash splits words at
// ':' and '='): candidates are cut to it. It prints nothing it cannot
// complete (the shell then completes file names) and never fails.
func newCompleteCommand(e *env) *cli.Command {
	return &cli.Command{Name: "__complete", Usage: "candidates for completion scripts", ArgsUsage: " ", Hidden: true,
		Flags: []cli.Flag{&cli.StringFlag{Name: "line", Usage: "the command line up to the cursor, as `LINE`"},
			&cli.StringFlag{Name: "word", Usage: "the part of the last word the shell replaces, as `WORD`"}},
		Action: func(c *cli.Context) error {
			words := shellWords(c.String("line"))
			if len(words) == 0 {
				return nil
			}
			cands := e.complete(words[1:])
			if w := c.String("word"); c.IsSet("word") {
				cur := words[len(words)-1]
				if strings.HasSuffix(cur, w) {
					cut := len(cur) - len(w)
					for i, s := range cands {
						if len(s) >= cut {
							cands[i] = s[cut:]
						}
					}
				}
			}
			for _, s := range cands {
				if !strings.ContainsAny(s, "\n\r") {
					fmt.Fprintln(e.stdout, s)
				}
			}
			return nil
		}}
}

// shellWords splits a command line as a shell would, well enough for
// completion: quotes and backslashes; an unfinished last word is a word,
// and a line that ends in a space ends in an empty word.
func shellWords(line string) []string {
	var words []string
	var b strings.Builder
	in, quote, esc := false, rune(0), false
	for _, r := range line {
		switch {
		case esc:
			b.WriteRune(r)
			esc = false
		case quote != 0:
			if r == quote {
				quote = 0
			} else if r == '\\' && quote == '"' {
				esc = true
			} else {
				b.WriteRune(r)
			}
		case r == '\\':
			esc, in = true, true
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteRune(r)
			in = true
		}
	}
	return append(words, b.String())
}

// argKind is what a value or an argument names, for completion.
type argKind int

const (
	kindNone argKind = iota
	kindRev
	kindKey
	kindAgent
	kindCommand
)

// kindOf reads a placeholder (a flag's `REV`, an argument of ArgsUsage).
func kindOf(p string) argKind {
	p = strings.Trim(p, "[]")
	switch {
	case strings.HasPrefix(p, "REV"):
		return kindRev
	case strings.Contains(p, "KEY") || p == "PREFIX":
		return kindKey
	case strings.Contains(p, "AGENT"):
		return kindAgent
	case p == "COMMAND":
		return kindCommand
	}
	return kindNone
}

// complete returns the candidates for the last of words (the command line
// after "agentstate").
func (e *env) complete(words []string) []string {
	cur, done := words[len(words)-1], words[:len(words)-1]
	app := newApp(e, []string{"agentstate", "help"}) // every command
	global := app.Flags
	var cmd *cli.Command
	flags := global
	var valueOf cli.Flag // the flag whose value cur is
	var pos []string
	dashdash := false
	for i := 0; i < len(done); i++ {
		w := done[i]
		if !dashdash && strings.HasPrefix(w, "-") && w != "-" {
			if w == "--" {
				dashdash = true
				continue
			}
			name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
			f := findFlag(flags, name)
			if f == nil && cmd != nil {
				f = findFlag(global, name)
			}
			if f == nil || !takesValue(f) || hasVal {
				if f != nil && hasVal {
					e.setGlobal(name, val)
				}
				continue
			}
			if i+1 == len(done) {
				valueOf = f
				break
			}
			i++
			e.setGlobal(name, done[i])
			continue
		}
		if cmd == nil {
			cmd = app.Command(w)
			if cmd == nil || cmd.Hidden {
				return nil
			}
			flags = cmd.Flags
			continue
		}
		if sub := subcommand(cmd, w); sub != nil && len(pos) == 0 {
			cmd, flags = sub, sub.Flags
			continue
		}
		pos = append(pos, w)
	}
	if valueOf != nil {
		if name := placeholder(usageOf(valueOf)); name != "" {
			return e.completeKind(kindOf(name), cur, "HEAD")
		}
		return nil
	}
	if name, val, ok := strings.Cut(strings.TrimLeft(cur, "-"), "="); !dashdash && strings.HasPrefix(cur, "-") && ok {
		// --flag=VALUE: the flag's value, after its name.
		f := findFlag(flags, name)
		if f == nil && cmd != nil {
			f = findFlag(global, name)
		}
		if f == nil || !takesValue(f) {
			return nil
		}
		var out []string
		for _, s := range e.completeKind(kindOf(placeholder(usageOf(f))), val, "HEAD") {
			out = append(out, cur[:len(cur)-len(val)]+s)
		}
		return out
	}
	if !dashdash && strings.HasPrefix(cur, "-") {
		var out []string
		fs := slices.Clone(flags)
		if cmd != nil {
			fs = append(fs, global...)
		}
		for _, f := range fs {
			for _, n := range f.Names() {
				s := "--" + n
				if len(n) == 1 {
					s = "-" + n
				}
				if strings.HasPrefix(s, cur) && !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
		return out
	}
	if cmd == nil {
		return completeCommands(app.Commands, cur)
	}
	if len(cmd.Subcommands) > 0 && len(pos) == 0 {
		return completeCommands(cmd.Subcommands, cur)
	}
	// The argument's placeholder in the command's usage line: the last one
	// repeats (KEY...), and after a "--", the one after "--" does.
	var usage []string
	after := -1
	for _, t := range strings.Fields(strings.NewReplacer("[", " ", "]", " ", "|", " ").Replace(cmd.ArgsUsage)) {
		if t == "--" {
			after = len(usage)
			continue
		}
		usage = append(usage, strings.TrimSuffix(t, "..."))
	}
	// REV[:KEY] and [REV:]KEY were split at a bracket: joined again.
	var p string
	switch {
	case len(usage) == 0:
		return nil
	case dashdash && after >= 0 && after < len(usage):
		p = usage[after]
	default:
		n := len(pos)
		if after >= 0 {
			usage = usage[:after]
		}
		if n >= len(usage) {
			return nil
		}
		p = usage[n]
	}
	at := "HEAD"
	if e.atFlag != "" {
		at = e.atFlag
	}
	k := kindOf(p)
	if strings.Contains(cmd.ArgsUsage, "REV:") || strings.Contains(cmd.ArgsUsage, "REV[:") {
		// REV:KEY: keys once a ':' is typed, and a revision before it.
		if rev, key, ok := strings.Cut(cur, ":"); ok {
			var out []string
			for _, s := range e.completeKind(kindKey, key, rev) {
				out = append(out, rev+":"+s)
			}
			return out
		}
		if strings.HasPrefix(cmd.ArgsUsage, "REV") {
			k = kindRev
		}
	}
	return e.completeKind(k, cur, at)
}

// setGlobal takes a global flag's value from the line being completed: the
// store and agent it names are the ones completed from.
func (e *env) setGlobal(name, val string) {
	switch name {
	case "store":
		e.storeFlag = val
	case "agent":
		e.agent = val
	case "remote":
		e.remoteFlag = val
	case "at":
		e.atFlag = val
	}
}

func completeCommands(cmds []*cli.Command, cur string) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden && strings.HasPrefix(c.Name, cur) {
			out = append(out, c.Name)
		}
	}
	return out
}

// completeKind asks the read model for the agents, revisions (of the
// agent, or of AGENT@) or keys (at rev) that begin with cur.
func (e *env) completeKind(k argKind, cur, rev string) []string {
	if k == kindCommand {
		var out []string
		for _, c := range commandTable {
			if !strings.HasPrefix(c.name, "__") && strings.HasPrefix(c.name, cur) {
				out = append(out, c.name)
			}
		}
		return out
	}
	if k == kindNone {
		return nil
	}
	var out []string
	_ = e.withRepoRead(func(r *repo.Repo) error {
		v := inspect.New(r)
		var c inspect.Completion
		var err error
		switch k {
		case kindAgent:
			c, err = v.CompleteAgents(e.ctx, cur)
		case kindKey:
			c, err = v.CompleteKeys(e.ctx, e.agent, rev, cur)
		case kindRev:
			if agent, rest, ok := strings.Cut(cur, "@"); ok {
				c, err = v.CompleteRevs(e.ctx, agent, rest)
				for i, s := range c.Values {
					c.Values[i] = agent + "@" + s
				}
				break
			}
			c, err = v.CompleteRevs(e.ctx, e.agent, cur)
			if err == nil {
				if a, aerr := v.CompleteAgents(e.ctx, cur); aerr == nil {
					for _, s := range a.Values {
						c.Values = append(c.Values, s+"@")
					}
				}
			}
		}
		if err == nil {
			out = c.Values
		}
		return nil
	})
	return out
}

func findFlag(fs []cli.Flag, name string) cli.Flag {
	for _, f := range fs {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if tv, ok := f.(interface{ TakesValue() bool }); ok {
		return tv.TakesValue()
	}
	return true
}

func usageOf(f cli.Flag) string {
	if u, ok := f.(interface{ GetUsage() string }); ok {
		return u.GetUsage()
	}
	return ""
}

// placeholder is the name a flag's usage puts in backquotes (urfave/cli
// prints it as the flag's value): "the revision `REV` to read" is REV.
func placeholder(usage string) string {
	_, rest, ok := strings.Cut(usage, "`")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, "`")
	if !ok {
		return ""
	}
	return name
}
