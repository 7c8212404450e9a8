// Command slimget is what a slim read-only engine would be for an
// unserved get (bench workload 21, row 21e): a program that links the
// store and the read model (dag/repo, dag/inspect) and none of the command
// line, the server, SQLite, ENS or MCP, and prints one key's value as 'get'
// does.
//
//	slimget STORE-DIR AGENT KEY
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: slimget STORE-DIR AGENT KEY")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "slimget:", err)
		os.Exit(1)
	}
}

func run(dir, agent, key string) error {
	ctx := context.Background()
	r, err := repo.Open(dir, repo.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	_, rd, err := inspect.New(r).Open(ctx, agent, "", key)
	if err == nil {
		_, err = objects.CopyValue(os.Stdout, rd)
	}
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return err
}
