package cli

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// commandTable lists every command under its name, in the order help
// shows them; each lives in its own cmd_<name>.go beside its flags. (It is
// set in init: serve's command refers back to it.)
var commandTable []commandEntry

// commandEntry is a command's name and builder.
type commandEntry struct {
	name  string
	build func(*env) *cli.Command
}

func init() {
	commandTable = []commandEntry{
		{"init", newInitCommand},
		{"commit", newCommitCommand},
		{"put", newPutCommand},
		{"get", newGetCommand},
		{"rm", newRmCommand},
		{"ls", newLsCommand},
		{"log", newLogCommand},
		{"show", newShowCommand},
		{"diff", newDiffCommand},
		{"blame", newBlameCommand},
		{"sql", newSQLCommand},
		{"checkout", newCheckoutCommand},
		{"reset", newResetCommand},
		{"undo", newUndoCommand},
		{"redo", newRedoCommand},
		{"revert", newRevertCommand},
		{"oplog", newOplogCommand},
		{"fork", newForkCommand},
		{"agents", newAgentsCommand},
		{"hash", newHashCommand},
		{"verify", newVerifyCommand},
		{"gc", newGCCommand},
		{"forget", newForgetCommand},
		{"redact", newRedactCommand},
		{"redactions", newRedactionsCommand},
		{"tag", newTagCommand},
		{"du", newDuCommand},
		{"clone", newCloneCommand},
		{"pull", newPullCommand},
		{"send", newSendCommand},
		{"mcp", fullOnly["mcp"]},
		{"receipts", newReceiptsCommand},
		{"trust", newTrustCommand},
		{"export", newExportCommand},
		{"import", newImportCommand},
		{"keygen", newKeygenCommand},
		{"push", fullOnly["push"]},
		{"restore", fullOnly["restore"]},
		{"snapshots", newSnapshotsCommand},
		{"serve", fullOnly["serve"]},
		{"status", newStatusCommand},
		{"use", newUseCommand},
		{"help", newHelpCommand},
		{"version", newVersionCommand},
		{"completion", newCompletionCommand},
		{"__complete", newCompleteCommand},
	}
	// A lean build has no builder for the full engine's commands.
	commandTable = slices.DeleteFunc(commandTable, func(c commandEntry) bool { return c.build == nil })
}

// NeedsFullEngine reports whether this engine, built lean, must hand the
// command line args to the full engine: it names a command this build
// leaves out (fullOnly), names none or an unknown one, or asks for a
// listing of every command (help, shell completion). A line with no
// command that asks only for the version (--version or -v, no help flag)
// is run here: both engines print the same. The full build runs every
// line itself.
func NeedsFullEngine(args []string) bool {
	if !Lean {
		return false
	}
	i := commandIndex(args)
	if i >= len(args) {
		return !versionOnly(args) // no command: the whole help
	}
	switch args[i] {
	case "help", "completion", "__complete":
		return true
	}
	return commandBuilder(args[i]) == nil
}

// versionOnly reports whether args (a command line naming no command: flags
// and their values) ask for the version (--version, -v) and not for help.
// A global flag's value is not read as a flag: --agent v names an agent.
func versionOnly(args []string) bool {
	version := false
	for i := 1; i < len(args); i++ {
		name, _, withValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch {
		case name == "version" || name == "v":
			version = true
		case name == "help" || name == "h":
			return false
		case !withValue && slices.Contains(globalFlagNames, name):
			i++ // its value
		}
	}
	return version
}

// commands builds every command.
func commands(e *env) []*cli.Command {
	out := make([]*cli.Command, len(commandTable))
	for i, c := range commandTable {
		out[i] = c.build(e)
	}
	return out
}

// commandsFor builds the commands a command line needs: only the one it
// names when it names one and asks for no help, else all of them (help
// lists them, and an unknown name is reported against them). Building and
// setting up all 35 commands was most of a short served command's time.
func commandsFor(e *env, args []string) []*cli.Command {
	i := commandIndex(args)
	if i >= len(args) {
		return commands(e)
	}
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); a != name && (name == "h" || name == "help") {
			return commands(e)
		}
	}
	if args[i] == "help" {
		return commands(e) // help reads the others
	}
	if build := commandBuilder(args[i]); build != nil {
		return []*cli.Command{build(e)}
	}
	return commands(e)
}

// commandBuilder is the builder of the command named name; nil for none.
func commandBuilder(name string) func(*env) *cli.Command {
	for _, c := range commandTable {
		if c.name == name {
			return c.build
		}
	}
	return nil
}
