package cli

import (
	"github.com/agentstate/agentstate/ens"
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

// walrusFlags are the blob store and pointer flags of push and restore (see
// pipeline).
func walrusFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "walrus-publisher", Usage: "Walrus publisher `URL` (default: local blob directory)", EnvVars: []string{"AGENTSTATE_WALRUS_PUBLISHER"}},
		&cli.StringFlag{Name: "walrus-aggregator", Usage: "Walrus aggregator `URL`", EnvVars: []string{"AGENTSTATE_WALRUS_AGGREGATOR"}},
		&cli.Int64Flag{Name: "walrus-part-size", Usage: "split blobs larger than `BYTES` into parts under a manifest (default: the public publishers' 10 MiB limit)", EnvVars: []string{"AGENTSTATE_WALRUS_PART_SIZE"}},
		&cli.StringFlag{Name: "blob-dir", Usage: "local blob `DIR` (default <store>/blobs)", EnvVars: []string{"AGENTSTATE_BLOB_DIR"}},
		&cli.StringFlag{Name: "pointer-dir", Usage: "local pointer `DIR` (default <store>/pointers)", EnvVars: []string{"AGENTSTATE_POINTER_DIR"}},
		&cli.StringFlag{Name: "ens", Usage: "ENS `NAME` whose agent-snapshot record is the pointer"},
		&cli.StringFlag{Name: "eth-rpc", Usage: "Ethereum JSON-RPC `URL` for --ens", EnvVars: []string{"AGENTSTATE_ETH_RPC"}},
		&cli.StringFlag{Name: "ens-registry", Usage: "ENS registry `ADDRESS`", Value: ens.DefaultRegistryHex},
	}
}
