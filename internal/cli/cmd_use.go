package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/refs"
	"github.com/urfave/cli/v2"
)

// Where the agent a command acts on came from (env.agentFrom).
const (
	agentFromFlag    = "flag"    // --agent or AGENTSTATE_AGENT
	agentFromUse     = "use"     // the store's config.json, set by 'agentstate use'
	agentFromOnly    = "only"    // the store's only agent
	agentFromDefault = "default" // DefaultAgent
	agentFromNone    = "none"    // several agents, none chosen: commands that act on one fail
)

func newUseCommand(e *env) *cli.Command {
	return &cli.Command{Name: "use", Usage: "set the agent commands act on in this store when none is named (no AGENT: print it)", ArgsUsage: "[AGENT]",
		Action: e.useAction}
}

func (e *env) useAction(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	if c.NArg() == 0 {
		return e.withRepoRead(func(r *repo.Repo) error {
			if e.agentFrom == agentFromNone {
				fmt.Fprintf(e.stdout, "none (no agent named, and this store has %d: %s; choose one with 'agentstate use AGENT')\n", len(e.storeAgents), termsafe.Line(quoteNames(e.storeAgents)))
				return nil
			}
			fmt.Fprintf(e.stdout, "%s (%s)\n", termsafe.Line(e.agent), agentFromText[e.agentFrom])
			return nil
		})
	}
	name := c.Args().First()
	if err := refs.ValidateAgent(name); err != nil {
		return usagef("use: %v", err)
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		if r.Dir == "" {
			return errors.New("use records the agent in the store's config.json, which a store reached with --remote does not share; name the agent with --agent or AGENTSTATE_AGENT")
		}
		// Only an agent the store has: a typo gets the names close to it
		// (withRepoMode) and changes nothing.
		if _, err := r.Refs.Head(e.ctx, name); err != nil {
			return err
		}
		if err := setConfigAgent(r.Dir, name); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "commands in %s now act on %s when no agent is named\n", r.Dir, termsafe.Line(name))
		if v := e.getenv("AGENTSTATE_AGENT"); v != "" {
			fmt.Fprintf(e.stderr, "note: AGENTSTATE_AGENT=%s is set and still wins over it\n", termsafe.Line(v))
		}
		return nil
	})
}

var agentFromText = map[string]string{
	agentFromFlag:    "named by --agent or AGENTSTATE_AGENT",
	agentFromUse:     "set by 'agentstate use'",
	agentFromOnly:    "the store's only agent",
	agentFromDefault: "the default",
	agentFromNone:    "none chosen, and the store has several: name one with --agent, or 'agentstate use AGENT'",
	"":               "the default",
}

// configAgent returns the agent config.json in the store at dir names
// ("" for none). A name that is not a valid agent name is an error.
func configAgent(dir string) (string, error) {
	cfg, err := loadConfig(dir)
	if err != nil || cfg.Agent == "" {
		return "", err
	}
	if err := refs.ValidateAgent(cfg.Agent); err != nil {
		return "", fmt.Errorf("%s: agent %q: %w", filepath.Join(dir, ConfigFile), cfg.Agent, err)
	}
	return cfg.Agent, nil
}

// setConfigAgent records name as the store's agent in its config.json,
// keeping every other setting as written; the file is replaced whole
// (written beside it, then renamed), never left half-written.
func setConfigAgent(dir, name string) error {
	p := filepath.Join(dir, ConfigFile)
	fields := map[string]json.RawMessage{}
	mode := os.FileMode(0o600)
	data, err := os.ReadFile(p)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &fields); err != nil {
			return fmt.Errorf("%s: %w (nothing was changed)", p, err)
		}
		if fi, err := os.Stat(p); err == nil {
			mode = fi.Mode().Perm()
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	fields["agent"], _ = json.Marshal(name)
	out, err := json.MarshalIndent(fields, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// agentFromConfig makes the agent config.json names the one the command
// acts on, when none was named; it reads only the file, before the store
// is opened, so every command sees it.
func (e *env) agentFromConfig() error {
	if e.agentFrom != "" || (e.remoteFlag != "" && e.served == nil) {
		return nil
	}
	dir, err := e.storeDir()
	if err != nil {
		return nil // no store: the command reports it, or needs none
	}
	name, err := configAgent(dir)
	if err != nil {
		return err
	}
	if name != "" {
		e.agent, e.agentFrom = name, agentFromUse
	}
	return nil
}

// agentFromStore decides the agent the command acts on when none was
// named and config.json names none: the store's only agent; DefaultAgent in
// a store with none (so put and commit create it); and in a store with
// several, an error listing them (noAgentNamedError), for every command
// that acts on an agent (agentFree lists those that do not).
func (e *env) agentFromStore(r *repo.Repo) error {
	if e.agentFrom != "" {
		return nil
	}
	e.agentFrom = agentFromDefault
	heads, err := r.Refs.Agents(e.ctx)
	if err == nil && len(heads) == 1 {
		e.agent, e.agentFrom = heads[0].Agent, agentFromOnly
		return nil
	}
	for _, h := range heads {
		e.storeAgents = append(e.storeAgents, h.Agent)
	}
	if len(heads) > 1 {
		e.agentFrom = agentFromNone
		if e.actsOnOneAgent() {
			return &noAgentNamedError{agents: e.storeAgents, several: true}
		}
	}
	return nil
}

// agentFree are the commands that act on no one agent (or on each one a
// request names: mcp), so a store with several agents and none chosen does
// not stop them.
var agentFree = map[string]bool{
	"init": true, "agents": true, "status": true, "verify": true, "gc": true, "clone": true,
	"use": true, "version": true, "help": true, "completion": true, "__complete": true,
	"keygen": true, "serve": true, "mcp": true,
}

// actsOnOneAgent says whether the command line acts on one agent: not a
// command of agentFree, nor one given a flag that names every agent
// (--all-agents; forget --all).
func (e *env) actsOnOneAgent() bool {
	if agentFree[e.command] {
		return false
	}
	for _, a := range e.args {
		if a == "--" {
			break
		}
		if a == "--all-agents" || (e.command == "forget" && a == "--all") {
			return false
		}
	}
	return true
}

// noAgentNamedError is a command that acts on an agent run with none
// chosen in a store whose agents do not decide it (several; or the default
// agent's not existing beside others): the agents to choose from.
type noAgentNamedError struct {
	err     error
	agents  []string
	several bool
}

func (e *noAgentNamedError) Error() string {
	if e.several {
		return fmt.Sprintf("no agent named, and this store has %d: %s", len(e.agents), quoteNames(e.agents))
	}
	return fmt.Sprintf("no agent named, and this store has no agent %q; its agents: %s", DefaultAgent, quoteNames(e.agents))
}

func (e *noAgentNamedError) Unwrap() error { return e.err }

// unnamed turns the default agent's not existing into a
// noAgentNamedError when the store has other agents.
func (e *env) unnamed(err error) error {
	var na *refs.NoAgentError
	if e.agentFrom != agentFromDefault || len(e.storeAgents) == 0 || !errors.As(err, &na) || na.Agent != e.agent {
		return err
	}
	return &noAgentNamedError{err: err, agents: e.storeAgents}
}
