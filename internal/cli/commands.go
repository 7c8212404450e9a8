package cli

import "github.com/urfave/cli/v2"

// commands are agentstate's commands in the order --help lists them; each
// lives in its own cmd_<name>.go beside its flags.
func commands(e *env) []*cli.Command {
	return []*cli.Command{
		newInitCommand(e),
		newCommitCommand(e),
		newPutCommand(e),
		newGetCommand(e),
		newRmCommand(e),
		newLsCommand(e),
		newLogCommand(e),
		newShowCommand(e),
		newDiffCommand(e),
		newCheckoutCommand(e),
		newResetCommand(e),
		newUndoCommand(e),
		newRedoCommand(e),
		newOplogCommand(e),
		newForkCommand(e),
		newAgentsCommand(e),
		newHashCommand(e),
		newVerifyCommand(e),
		newGCCommand(e),
		newForgetCommand(e),
		newTagCommand(e),
		newDuCommand(e),
		newCloneCommand(e),
		newPullCommand(e),
		newSendCommand(e),
		newMcpCommand(e),
		newReceiptsCommand(e),
		newExportCommand(e),
		newImportCommand(e),
		newKeygenCommand(e),
		newPushCommand(e),
		newRestoreCommand(e),
		newSnapshotsCommand(e),
		newServeCommand(e),
		newStatusCommand(e),
	}
}
