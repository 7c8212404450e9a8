package cli

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// urfave/cli parses a command's flags with the standard library's flag
// package, which stops at the first argument that is not a flag: `log HEAD
// -n 1` would take "-n" and "1" as arguments, and a global flag after the
// command (`log --agent lumen`) is not a flag of the command. reorderArgs
// bridges that once, before urfave/cli parses: it moves every flag of a
// command line to where urfave/cli looks for it, reading which flags there
// are, and which take a value, from the command definitions themselves.
//
//   - a global flag anywhere goes before the command (unless the command has
//     a flag of the same name, which then wins);
//   - a command's flags go before its arguments, each with its value;
//   - `--` ends the flags: what follows is an argument whatever it looks
//     like; a `--` before any argument is taken as the flag package takes
//     it, and one after an argument is kept among the arguments where it
//     was (so `revert REV -- KEY` still sees it);
//   - a subcommand's name (trust add) is found among the arguments and what
//     follows it is the subcommand's, reordered the same way;
//   - "-" alone is an argument (stdin); an unknown flag stays with the
//     command's flags, for urfave/cli to report.
//
// The arguments of the result, after the flags, always follow a "--", so an
// argument that itself begins with "-" stays an argument.
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	global := flagSpecs(app.Flags, true)
	i := commandIndex(args)
	if i >= len(args) {
		return args
	}
	cmd := app.Command(args[i])
	if cmd == nil {
		return args // unknown: reported (with a suggestion) by the app
	}
	var moved []string
	rest := reorderCommand(cmd, args[i+1:], global, &moved)
	out := make([]string, 0, len(args)+2)
	out = append(out, args[:i]...)
	out = append(out, moved...)
	out = append(out, args[i])
	return append(out, rest...)
}

// reorderCommand reorders the arguments after cmd's name; global flags found
// among them are appended to moved.
func reorderCommand(cmd *cli.Command, args []string, global map[string]bool, moved *[]string) []string {
	own := flagSpecs(cmd.Flags, !cmd.HideHelp)
	var flags, pos []string
	for j := 0; j < len(args); j++ {
		a := args[j]
		if a == "--" {
			if len(pos) == 0 {
				pos = append(pos, args[j+1:]...) // the separator, as the flag package takes it
			} else {
				pos = append(pos, args[j:]...) // after an argument: the command's to read
			}
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if sub := subcommand(cmd, a); sub != nil && len(pos) == 0 {
				out := append(flags, a)
				return append(out, reorderCommand(sub, args[j+1:], global, moved)...)
			}
			pos = append(pos, a)
			continue
		}
		name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes, isOwn := own[name]
		dst := &flags
		if !isOwn {
			if t, ok := global[name]; ok {
				takes, dst = t, moved
			}
		}
		*dst = append(*dst, a)
		if takes && !hasVal && j+1 < len(args) {
			j++
			*dst = append(*dst, args[j])
		}
	}
	if len(pos) > 0 {
		flags = append(flags, "--")
		flags = append(flags, pos...)
	}
	return flags
}

// flagSpecs maps each name of each flag in fs to whether it takes a value;
// with help, the library's help flag (-h, --help) too.
func flagSpecs(fs []cli.Flag, help bool) map[string]bool {
	m := map[string]bool{}
	if help {
		for _, n := range cli.HelpFlag.Names() {
			m[n] = false
		}
	}
	for _, f := range fs {
		takes := true
		if tv, ok := f.(interface{ TakesValue() bool }); ok {
			takes = tv.TakesValue()
		}
		for _, n := range f.Names() {
			m[n] = takes
		}
	}
	return m
}

func subcommand(cmd *cli.Command, name string) *cli.Command {
	for _, s := range cmd.Subcommands {
		if s.HasName(name) {
			return s
		}
	}
	return nil
}
