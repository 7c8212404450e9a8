package cli

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// commandTable lists every command under its name, in the order help
// shows them; each lives in its own cmd_<name>.go beside its flags. (It is
// set in init: serve's command refers back to it.)
var commandTable []struct {
	name  string
	build func(*env) *cli.Command
}

func init() {
	commandTable = []struct {
		name  string
		build func(*env) *cli.Command
	}{
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
		{"mcp", newMcpCommand},
		{"receipts", newReceiptsCommand},
		{"trust", newTrustCommand},
		{"export", newExportCommand},
		{"import", newImportCommand},
		{"keygen", newKeygenCommand},
		{"push", newPushCommand},
		{"restore", newRestoreCommand},
		{"snapshots", newSnapshotsCommand},
		{"serve", newServeCommand},
		{"status", newStatusCommand},
		{"use", newUseCommand},
		{"help", newHelpCommand},
		{"version", newVersionCommand},
		{"completion", newCompletionCommand},
		{"__complete", newCompleteCommand},
	}
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
