package cli

import (
	"github.com/urfave/cli/v2"
)

// Flags are made afresh for every command line: a server runs several at once,
// and urfave/cli writes into its flags while parsing.
func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print JSON (shape documented in docs/cli.md)"}
}

// bytesFlag is --bytes of the commands that print sizes.
func bytesFlag() cli.Flag {
	return &cli.BoolFlag{Name: "bytes", Usage: "print sizes as exact byte counts (--json always does)"}
}

func patchFlag() cli.Flag {
	return &cli.BoolFlag{Name: "patch", Aliases: []string{"p"}, Usage: "show line diffs of text values"}
}

// messageFlag is -m/--message of the commands that make a commit.
func messageFlag() cli.Flag {
	return &cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "commit `MESSAGE`"}
}

// atFlag is --at REV of the commands that read one revision's tree.
func atFlag() cli.Flag {
	return &cli.StringFlag{Name: "at", Value: "HEAD", Usage: "the revision `REV` to read"}
}

// keyFlag is the snapshot key of push and restore.
func keyFlag() cli.Flag {
	return &cli.StringFlag{Name: "key", Usage: "32-byte key `FILE` (or AGENTSTATE_PASSPHRASE)", EnvVars: []string{"AGENTSTATE_KEY"}}
}
