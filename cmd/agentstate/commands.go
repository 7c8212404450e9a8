package main

import "github.com/urfave/cli/v2"

var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print JSON (shape documented in docs/cli.md)"}

var patchFlag = &cli.BoolFlag{Name: "patch", Aliases: []string{"p"}, Usage: "show line diffs of text values"}

func commands(e *env) []*cli.Command {
	return append(coreCommands(e), snapshotCommands(e)...)
}

func coreCommands(e *env) []*cli.Command {
	return []*cli.Command{
		{Name: "init", Usage: "create a store (.agentstate here, or --store DIR)", ArgsUsage: " ", Action: e.cmdInit},
		{Name: "commit", Usage: "snapshot a brain directory as the agent's next commit", ArgsUsage: "DIR",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "commit message"},
				&cli.StringSliceFlag{Name: "meta", Usage: "metadata KEY=VALUE (repeatable)"},
				&cli.BoolFlag{Name: "allow-empty", Usage: "commit even if nothing changed"},
			}, Action: e.cmdCommit},
		{Name: "put", Usage: "write one key (value from FILE or stdin) as a commit", ArgsUsage: "KEY [FILE|-]",
			Flags:  []cli.Flag{&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "commit message"}},
			Action: e.cmdPut},
		{Name: "get", Usage: "print one key's value", ArgsUsage: "KEY",
			Flags: []cli.Flag{&cli.StringFlag{Name: "at", Value: "HEAD", Usage: "revision"}, jsonFlag}, Action: e.cmdGet},
		{Name: "rm", Usage: "delete one key as a commit", ArgsUsage: "KEY",
			Flags:  []cli.Flag{&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "commit message"}},
			Action: e.cmdRm},
		{Name: "ls", Usage: "list keys", ArgsUsage: "[PREFIX]",
			Flags: []cli.Flag{&cli.StringFlag{Name: "at", Value: "HEAD", Usage: "revision"},
				&cli.BoolFlag{Name: "long", Aliases: []string{"l"}, Usage: "show value CID and size"}, jsonFlag},
			Action: e.cmdLs},
		{Name: "log", Usage: "show history, newest first", ArgsUsage: "[REV]",
			Flags: []cli.Flag{&cli.IntFlag{Name: "n", Value: -1, Usage: "show at most N commits"},
				&cli.StringFlag{Name: "path", Usage: "only commits that changed KEY"},
				&cli.BoolFlag{Name: "oneline", Usage: "one line per commit"}, jsonFlag},
			Action: e.cmdLog},
		{Name: "show", Usage: "show a commit and what it changed, or REV:KEY's value", ArgsUsage: "REV[:KEY]",
			Flags: []cli.Flag{patchFlag, jsonFlag}, Action: e.cmdShow},
		{Name: "diff", Usage: "list keys that differ between REV and REV2 (default HEAD)", ArgsUsage: "REV [REV2]",
			Flags:  []cli.Flag{&cli.BoolFlag{Name: "stat", Usage: "show sizes and a summary"}, patchFlag, jsonFlag},
			Action: e.cmdDiff},
		{Name: "checkout", Usage: "make DIR exactly REV's state (HEAD does not move)", ArgsUsage: "REV DIR", Action: e.cmdCheckout},
		{Name: "reset", Usage: "move HEAD to REV", ArgsUsage: "REV", Action: e.cmdReset},
		{Name: "undo", Usage: "step HEAD back along the operation log (repeatable)", ArgsUsage: " ", Action: e.cmdUndo},
		{Name: "redo", Usage: "re-apply the operation the last undo reverted", ArgsUsage: " ", Action: e.cmdRedo},
		{Name: "oplog", Usage: "show the agent's operation log, newest first", ArgsUsage: " ",
			Flags: []cli.Flag{&cli.IntFlag{Name: "n", Value: -1, Usage: "show at most N entries"}, jsonFlag}, Action: e.cmdOplog},
		{Name: "fork", Usage: "start a new agent lineage at REV (default HEAD)", ArgsUsage: "NEW",
			Flags: []cli.Flag{&cli.StringFlag{Name: "from", Value: "HEAD", Usage: "revision to fork from"}}, Action: e.cmdFork},
		{Name: "agents", Usage: "list agents", ArgsUsage: " ", Flags: []cli.Flag{jsonFlag}, Action: e.cmdAgents},
		{Name: "hash", Usage: "print the lineage bundle hash of REV (default HEAD) or of --dir", ArgsUsage: "[REV]",
			Flags: []cli.Flag{&cli.StringFlag{Name: "dir", Usage: "hash a brain directory on disk instead"}, jsonFlag}, Action: e.cmdHash},
		{Name: "verify", Usage: "re-hash every reachable block and check every operation log", ArgsUsage: " ",
			Flags: []cli.Flag{jsonFlag}, Action: e.cmdVerify},
		{Name: "gc", Usage: "delete blocks nothing reaches", ArgsUsage: " ",
			Flags: []cli.Flag{&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "report only"}}, Action: e.cmdGC},
		e.receiptsCommand(),
	}
}
