package cli

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"errors"
	"fmt"
	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/termsafe"
	"io"
	"os"
	"strings"

	"github.com/agentstate/agentstate/refs"
	"github.com/urfave/cli/v2"
)

// DefaultAgent is the agent commands act on when neither --agent nor
// AGENTSTATE_AGENT names one, the store's config.json names none (agentstate
// use) and the store has not exactly one agent.
const DefaultAgent = "main"

// usageError marks a command-line mistake (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// env is what every command runs with.
type env struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	storeFlag      string
	remoteFlag     string
	agent          string
	// agentFrom says where agent came from (agentFromFlag...); "" until
	// decided (see agentFromConfig, agentFromStore).
	agentFrom string
	// noPager: --no-pager; command: the command's name (pagedCommands);
	// paged: stdout is the pager's input (see paging).
	noPager bool
	command string
	paged   bool
	// debug: --debug; a failure also prints the error as the library
	// wrote it, with the chain of wrapped causes.
	debug bool
	// storeAgents: the store's agents when none was named and the store
	// has several (agentFromStore), for the error that lists them.
	storeAgents []string
	atFlag      string // __complete: the --at of the line it completes
	exactBytes  bool   // --bytes: sizes as exact byte counts
	color       bool
	tty         bool
	line        []byte // printLogEntry's line, reused (io.Writer keeps none)
	// dir is the working directory relative paths are taken from, and
	// getenv reads the environment: the process's own, or a served client's.
	dir    string
	getenv func(string) string
	// served is the repository of the server running this command for a
	// client (Exec); nil when the command opens the store itself.
	served *repo.Repo
	// gatesOwnWrites: the command does not hold the write gate for its whole
	// run: gc (which waits on it) and mcp (which holds it per write, through
	// dag/inspect, and may run for hours).
	gatesOwnWrites bool
	// action is the command the parse chose, run after parsing (see main).
	action func() error
	// args is the command line as given (for what follows a "--", which
	// the flag parser consumes).
	args []string
	// locked, when set, is called by the command's own open of the store
	// once it holds the store's lock (repo.Options.Locked).
	locked func()
	// exits: the process ends when the command returns (RunProcess), so a
	// read-only open of the store is closed beside what follows instead of
	// before it (see closeRead); closing, when not nil, is closed once that
	// close is done.
	exits   bool
	closing chan struct{}
}

// parseMu serialises command-line parsing within a process (see env.main).
var parseMu sync.Mutex

// Main runs the command line args and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return mainIn(ctx, false, args, stdin, stdout, stderr)
}

// mainIn is Main; exits says the process ends as soon as it returns.
func mainIn(ctx context.Context, exits bool, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, exits: exits}
	e.dir, _ = os.Getwd()
	e.tty = isTerminal(stdout)
	return e.main(args)
}

// Exec runs a command line for a client of a served store, in the server's
// process, against the repository it serves (a remote.ExecFunc): relative
// paths are the client's, and so are the environment variables read.
func Exec(ctx context.Context, r *repo.Repo, req remote.ExecRequest, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "agentstate: internal error: %v (this is a bug; the store is unchanged unless the command reported progress)\n", p)
			code = 3
		}
	}()
	vars := map[string]string{}
	for _, kv := range req.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, dir: req.Dir, served: r,
		getenv: func(k string) string { return vars[k] }, tty: req.StdoutTTY}
	return e.main(req.Args)
}

// path resolves a path a user gave against the client's working directory
// when a server runs the command; a command that runs in the user's own
// process uses paths as given.
func (e *env) path(p string) string {
	if p == "" || filepath.IsAbs(p) || e.served == nil {
		return p
	}
	return filepath.Join(e.dir, p)
}

func (e *env) main(args []string) int {
	e.args = args
	e.color = e.tty && e.getenv("NO_COLOR") == "" && e.getenv("TERM") != "dumb"
	stderr := e.stderr
	app := newApp(e, args)
	args = reorderArgs(app, args)
	if e.served != nil {
		args = envFlags(app, args, e.getenv)
	}
	// urfave/cli keeps state in package globals (its help flag, go-ethereum's
	// flag printer) that parsing writes; a server parses several command lines
	// at once. So parsing (and help) runs under one lock, and the command's
	// action, recorded by the parse, runs after it, concurrently with others.
	parseMu.Lock()
	err := app.RunContext(e.ctx, args)
	parseMu.Unlock()
	if err == nil && e.action != nil {
		err = e.agentFromConfig()
	}
	if err == nil && e.action != nil {
		err = e.paging(func() error { return e.withProgressBar(e.action) }) // progress.go
	}
	if err == nil {
		return 0
	}
	msg := forPeople(withHint(err))
	msg = strings.TrimPrefix(msg, "agentstate: ")
	fmt.Fprintf(stderr, "agentstate: %s\n", termsafe.Line(oneLine(msg)))
	if e.debug {
		printCauses(stderr, err)
	}
	var ue *usageError
	var ec cli.ExitCoder // only help raises these ("No help topic for ...")
	if errors.As(err, &ue) || errors.As(err, &ec) {
		return 2
	}
	return 1
}

// printCauses prints err as its packages wrote it (package prefixes kept)
// and each error it wraps, depth first, with its Go type: what --debug
// adds to a failure.
func printCauses(w io.Writer, err error) {
	var walk func(err error, depth int)
	walk = func(err error, depth int) {
		if err == nil || depth > 32 {
			return
		}
		fmt.Fprintf(w, "agentstate: debug: %s%T: %s\n", strings.Repeat("  ", depth), err, termsafe.Line(oneLine(err.Error())))
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap(), depth+1)
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e, depth+1)
			}
		}
	}
	walk(err, 0)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// globalFlags are the flags before the command.
func globalFlags(e *env) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "store", Usage: "store `DIR` (default: nearest .agentstate walking up)", EnvVars: []string{"AGENTSTATE_STORE"}, Destination: &e.storeFlag},
		&cli.StringFlag{Name: "remote", Usage: "a served store's TCP address `HOST:PORT`; the token in AGENTSTATE_TOKEN", EnvVars: []string{"AGENTSTATE_REMOTE"}, Destination: &e.remoteFlag},
		&cli.StringFlag{Name: "agent", Usage: "`AGENT` to act on", Value: DefaultAgent, EnvVars: []string{"AGENTSTATE_AGENT"}, Destination: &e.agent},
		&cli.BoolFlag{Name: "debug", Usage: "on a failure, also print the error as the library wrote it and the chain of causes it wraps", EnvVars: []string{"AGENTSTATE_DEBUG"}, Destination: &e.debug},
		&cli.BoolFlag{Name: "no-pager", Usage: "print long output straight to the terminal (else through AGENTSTATE_PAGER, PAGER or " + DefaultPager + ")", Destination: &e.noPager},
	}
}

// globalFlagNames are the names of the global flags that take a value.
var globalFlagNames = func() []string {
	var out []string
	for _, f := range globalFlags(&env{}) {
		if tv, ok := f.(interface{ TakesValue() bool }); ok && tv.TakesValue() {
			out = append(out, f.Names()...)
		}
	}
	return out
}()

// commandIndex returns the index in args of the command's name: the first
// argument that is not a global flag or its value (len(args) when none).
// (A global flag that takes no value is given alone, or as --flag=false.)
func commandIndex(args []string) int {
	i := 1
	for i < len(args) {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			break
		}
		if !strings.Contains(a, "=") && slices.Contains(globalFlagNames, strings.TrimLeft(a, "-")) {
			i++
		}
		i++
	}
	return min(i, len(args))
}

func newApp(e *env, args []string) *cli.App {
	app := &cli.App{
		Name:            "agentstate",
		Usage:           "a content-addressed, versioned store for AI agent brains",
		UsageText:       "agentstate [--store DIR] [--agent NAME] COMMAND [flags] [args]",
		Writer:          e.stdout,
		ErrWriter:       e.stderr,
		HideHelpCommand: true,
		Compiled:        time.Unix(0, 0), // else every parse stats the executable

		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		Flags:          globalFlags(e),
		Before: func(c *cli.Context) error {
			chosen := c.IsSet("agent")
			if e.agent == "" && !flagGiven([]string{"agent"}, e.args) {
				// AGENTSTATE_AGENT set empty names no agent.
				e.agent, chosen = DefaultAgent, false
			}
			if err := refs.ValidateAgent(e.agent); err != nil {
				return usagef("--agent: %v", err)
			}
			if chosen {
				e.agentFrom = agentFromFlag
			}
			return nil
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return unknownCommand(c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Commands: commandsFor(e, args),
	}
	if len(app.Commands) == 1 {
		// The command line names one command and asks for no help (see
		// commandsFor), so it gets no help flags either: before a command
		// runs, urfave/cli looks each flag up by each name of every flag,
		// a regular expression per name, and every flag fewer is time off
		// every served command.
		app.HideHelp = true
		app.Commands[0].HideHelp = true
	}
	if !app.HideHelp {
		// urfave/cli gives the app no help flag when it has a command
		// named help: it is given here.
		app.Flags = append(app.Flags, cli.HelpFlag)
		app.Version = buildVersion().String() // --version, -v
	}
	app.Flags = namesOnce(app.Flags)
	for _, c := range app.Commands {
		c.Flags = namesOnce(c.Flags)
		c.OnUsageError = onUsageError // flag errors of every command are usage errors
		withExamples(c, "")
		if c.Name == "help" {
			continue // runs during the parse (see newHelpCommand)
		}
		deferAction(e, c)
	}
	app.CustomAppHelpTemplate = strings.TrimRight(cli.AppHelpTemplate, "\n") + "\n\nEXAMPLES:\n   " + strings.Join(examples[""], "\n   ") + "\n"
	return app
}

// deferAction makes c's action (and its subcommands') record itself as
// the action to run after parsing (see env.main).
func deferAction(e *env, c *cli.Command) {
	name := c.Name
	if act := c.Action; act != nil {
		c.Action = func(c *cli.Context) error {
			e.command = name
			// Output that follows HEAD until Ctrl-C is not paged.
			e.noPager = e.noPager || c.Bool("follow")
			e.exactBytes = c.Bool("bytes")
			e.action = func() error { return act(c) }
			return nil
		}
	}
	for _, s := range c.Subcommands {
		s.OnUsageError = onUsageError
		deferAction(e, s)
	}
}

// unknownCommand is the usage error for a command name that names none,
// with the commands close to it.
func unknownCommand(name string) error {
	var names []string
	for _, c := range commandTable {
		if !strings.HasPrefix(c.name, "__") {
			names = append(names, c.name)
		}
	}
	if near := dag.NearIDs(name, names); len(near) > 0 {
		return usagef("unknown command %q; did you mean %s? (see 'agentstate --help')", name, quoteNames(near))
	}
	return usagef("unknown command %q (see 'agentstate --help')", name)
}

func onUsageError(c *cli.Context, err error, isSub bool) error {
	name := c.Command.Name
	if name == "" || name == c.App.Name {
		return usagef("%v (see 'agentstate --help')", err)
	}
	return usagef("%v (see 'agentstate %s --help')", err, name)
}

// envFlags rewrites a served client's command line so that the flags bound
// to environment variables take the client's values: urfave/cli reads the
// environment of the process it runs in, which for a served command is the
// server's (and serve clears those variables from its own environment).
// A value the client set becomes an explicit flag, placed before the
// client's own flags so that an explicit flag still wins.
func envFlags(app *cli.App, args []string, getenv func(string) string) []string {
	if len(args) == 0 {
		return args
	}
	inject := func(flags []cli.Flag, given []string) []string {
		var out []string
		for _, f := range flags {
			ef, ok := f.(interface{ GetEnvVars() []string })
			if !ok {
				continue
			}
			for _, v := range ef.GetEnvVars() {
				val := getenv(v)
				if val == "" || flagGiven(f.Names(), given) {
					continue
				}
				out = append(out, "--"+f.Names()[0]+"="+val)
				break
			}
		}
		return out
	}
	i := commandIndex(args)
	out := append([]string{args[0]}, inject(app.Flags, args[1:i])...)
	out = append(out, args[1:i]...)
	if i < len(args) {
		out = append(out, args[i])
		if cmd := app.Command(args[i]); cmd != nil {
			out = append(out, inject(cmd.Flags, args[i+1:])...)
		}
		out = append(out, args[i+1:]...)
	}
	return out
}

func flagGiven(names, args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		a = strings.TrimLeft(a, "-")
		for _, n := range names {
			if a == n || strings.HasPrefix(a, n+"=") {
				return true
			}
		}
	}
	return false
}

// boundEnvVars lists the environment variables the flags of every command
// read.
func boundEnvVars(e *env) []string {
	var out []string
	add := func(flags []cli.Flag) {
		for _, f := range flags {
			if ef, ok := f.(interface{ GetEnvVars() []string }); ok {
				out = append(out, ef.GetEnvVars()...)
			}
		}
	}
	add(globalFlags(e))
	for _, c := range commands(e) {
		add(c.Flags)
	}
	return out
}
