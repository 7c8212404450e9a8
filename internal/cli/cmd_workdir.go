package cli

import (
	"fmt"
	"os"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

// A working directory against a commit: status DIR and diff REV DIR render
// the read model's inspect.View.DiffDir (the directory read as a commit of
// it would read it, with the stat cache, into memory: nothing is written).

// isDir says whether path names a directory (followed through a symlink).
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// runStatusDir prints what DIR changes against the agent's HEAD, as git
// status does for a work tree (--json: inspect.DirDiff).
func (e *env) runStatusDir(c *cli.Context, dir string) error {
	if !isDir(e.path(dir)) {
		return usagef("status DIR: %s is not a directory", dir)
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		if e.agentFrom == agentFromNone {
			return &noAgentNamedError{agents: e.storeAgents, several: true}
		}
		dd, _, err := inspect.New(r).DiffDir(e.ctx, e.agent, "HEAD", e.path(dir), false)
		if err != nil {
			return err
		}
		dd.Dir = dir
		if c.Bool("json") {
			return e.writeJSON(dd)
		}
		fmt.Fprintf(e.stdout, "agent %s, HEAD %s; %s: %s, %d read (the others unchanged since the store last read or wrote them)\n",
			termsafe.Line(e.agent), dd.Commit.Short(), termsafe.Line(dir), plural(dd.Files, "file"), dd.Read)
		if len(dd.Changes) == 0 {
			fmt.Fprintf(e.stdout, "%s matches HEAD: nothing to commit\n", termsafe.Line(dir))
		} else {
			fmt.Fprintf(e.stdout, "changes in %s not committed ('agentstate commit %s' commits them; 'agentstate diff -p HEAD %s' shows them):\n",
				termsafe.Line(dir), termsafe.Line(dir), termsafe.Line(dir))
			for _, ch := range dd.Changes {
				fmt.Fprintf(e.stdout, "  %s %s\n", e.paint(changeColor[ch.Change], statusWord[ch.Change]), termsafe.Line(ch.Path))
			}
		}
		for _, s := range dd.Skipped {
			fmt.Fprintf(e.stdout, "  skipped   %s (%s)\n", termsafe.Line(s.Path), termsafe.Line(s.Reason))
		}
		return nil
	})
}

var statusWord = map[objects.ChangeKind]string{objects.Added: "added:   ", objects.Removed: "deleted: ", objects.Modified: "modified:"}
