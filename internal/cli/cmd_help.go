package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// help [COMMAND [SUBCOMMAND]] is COMMAND --help (with no COMMAND, --help).
// It runs while the command line is parsed (help writes urfave/cli's
// globals: see env.main), not after it as other commands do.
func newHelpCommand(e *env) *cli.Command {
	return &cli.Command{Name: "help", Usage: "show the commands, or one command's help", ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) > 0 && commandBuilder(args[0]) == nil {
				return unknownCommand(args[0])
			}
			line := append(append([]string{"agentstate"}, args...), "--help")
			return newApp(e, line).RunContext(e.ctx, line)
		}}
}

// version prints the module's version and the revision it was built from.
func newVersionCommand(e *env) *cli.Command {
	return &cli.Command{Name: "version", Usage: "print the version and the revision agentstate was built from", ArgsUsage: " ",
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			if err := nargs(c, 0, 0); err != nil {
				return err
			}
			v := buildVersion()
			if c.Bool("json") {
				return e.writeJSON(v)
			}
			fmt.Fprintf(e.stdout, "agentstate version %s\n", v) // as --version prints it, and as git prints both
			return nil
		}}
}

// Version is what the build info says of the binary: the main module's
// version ("(devel)" for a build from a checkout) and the version control
// revision, its time and whether the tree had changes, when the build
// recorded them.
type Version struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

func buildVersion() Version {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version{Version: "unknown"}
	}
	v := Version{Module: bi.Main.Path, Version: bi.Main.Version, Go: bi.GoVersion}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v Version) String() string {
	var b strings.Builder
	b.WriteString(v.Version)
	if v.Revision != "" {
		fmt.Fprintf(&b, " (revision %s", v.Revision)
		if v.Time != "" {
			fmt.Fprintf(&b, ", %s", v.Time)
		}
		if v.Modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	if v.Go != "" {
		fmt.Fprintf(&b, " %s", v.Go)
	}
	return b.String()
}
