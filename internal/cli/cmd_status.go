package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newStatusCommand(e *env) *cli.Command {
	return &cli.Command{Name: "status", Usage: "who holds the store, since when, and the agents' HEADs; with DIR: what DIR changes against HEAD (nothing committed)", ArgsUsage: "[DIR]",
		Flags: []cli.Flag{jsonFlag()}, Action: e.runStatus}
}

// agentJSON is an agent as status --json lists it.
type agentJSON struct {
	Agent      string      `json:"agent"`
	Head       objects.CID `json:"head"`
	Operations uint64      `json:"operations"`
}

type statusJSON struct {
	Store   string      `json:"store"`
	Served  bool        `json:"served"`
	Holder  string      `json:"holder,omitempty"`
	PID     int         `json:"pid,omitempty"`
	Since   string      `json:"since,omitempty"`
	Listen  []string    `json:"listen,omitempty"`
	Clients int         `json:"connections,omitempty"`
	Exec    bool        `json:"exec,omitempty"`
	Note    string      `json:"note,omitempty"`
	Agents  []agentJSON `json:"agents"`
	// Agent is the agent commands act on here when none is named, and
	// AgentFrom where it comes from: "flag" (--agent, AGENTSTATE_AGENT),
	// "use" (agentstate use), "only" (the store's only agent), "default",
	// "none" (several agents, none chosen; Agent is then "").
	Agent     string `json:"agent"`
	AgentFrom string `json:"agentFrom"`
}

func (e *env) runStatus(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	if c.NArg() == 1 {
		return e.runStatusDir(c, c.Args().First()) // cmd_workdir.go
	}
	dir, err := e.storeDir()
	if err != nil {
		return err
	}
	out := statusJSON{Store: dir, Agents: []agentJSON{}}
	var st *remote.Status
	if cl, err := remote.Dial(e.ctx, remote.SocketPath(dir), remote.DialOptions{}); err == nil {
		st, err = cl.Status(e.ctx)
		cl.Close()
		if err != nil {
			return err
		}
	} else if _, serr := os.Lstat(remote.SocketPath(dir)); serr == nil {
		out.Note = "a socket file a stopped server left behind (the next server replaces it)"
	}
	if st != nil {
		out.Served, out.Holder, out.PID, out.Exec, out.Listen = true, st.Holder, st.PID, st.Exec, st.Listen
		out.Since = time.Unix(st.Since, 0).UTC().Format(time.RFC3339)
		out.Clients = st.Clients
	}
	err = e.withRepoRead(func(r *repo.Repo) error {
		heads, err := r.Refs.Agents(e.ctx)
		for _, h := range heads {
			out.Agents = append(out.Agents, agentJSON{h.Agent, h.Commit, h.Seq})
		}
		return err
	})
	if errors.Is(err, badger.ErrInUse) && !out.Served {
		out.Note = "held by another process that does not serve it (a runtime with serving turned off, or a command)"
		err = nil
	}
	if err != nil {
		return err
	}
	out.Agent, out.AgentFrom = e.agent, e.agentFrom
	if out.AgentFrom == agentFromNone {
		out.Agent = ""
	}
	if out.AgentFrom == "" {
		out.AgentFrom = agentFromDefault
	}
	if c.Bool("json") {
		return e.writeJSON(out)
	}
	fmt.Fprintf(e.stdout, "store    %s\n", dir)
	if out.Served {
		fmt.Fprintf(e.stdout, "served   by %s (pid %d)", termsafe.Line(out.Holder), out.PID)
		if out.Since != "" {
			fmt.Fprintf(e.stdout, " since %s", out.Since)
		}
		fmt.Fprintln(e.stdout)
		if len(out.Listen) > 0 {
			fmt.Fprintf(e.stdout, "listen   %s\n", termsafe.Line(strings.Join(out.Listen, ", ")))
		}
		fmt.Fprintf(e.stdout, "clients  %d connection(s), this command's included\n", out.Clients)
	} else {
		fmt.Fprintf(e.stdout, "served   no (commands open the store themselves)\n")
	}
	if out.Note != "" {
		fmt.Fprintf(e.stdout, "note     %s\n", out.Note)
	}
	if out.AgentFrom == agentFromNone {
		fmt.Fprintf(e.stdout, "agent    %s\n", agentFromText[out.AgentFrom])
	} else {
		fmt.Fprintf(e.stdout, "agent    %s (%s)\n", termsafe.Line(out.Agent), agentFromText[out.AgentFrom])
	}
	fmt.Fprintf(e.stdout, "agents   %d\n", len(out.Agents))
	for _, a := range out.Agents {
		fmt.Fprintf(e.stdout, "  %-20s %s  (%d operations)\n", termsafe.Line(a.Agent), a.Head.Short(), a.Operations)
	}
	return nil
}
