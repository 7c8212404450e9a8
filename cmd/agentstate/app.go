package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/store"
	"github.com/agentstate/agentstate/refs"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// DefaultAgent is the agent commands act on when neither --agent nor
// AGENTSTATE_AGENT names one.
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
	agent          string
	color          bool
	tty            bool
}

func (e *env) storeDir() (string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return repo.Find(e.storeFlag, cwd)
}

// open opens the store for a command.
func (e *env) open() (*repo.Repo, error) {
	dir, err := e.storeDir()
	if err != nil {
		return nil, err
	}
	lt, err := lockTimeout()
	if err != nil {
		return nil, err
	}
	return repo.Open(dir, repo.Options{Sync: os.Getenv("AGENTSTATE_SYNC") == "1", LockTimeout: lt})
}

// lockTimeout reads AGENTSTATE_LOCK_TIMEOUT: how long a command waits for
// another process to release the store, as a Go duration ("10s", "500ms") or
// a number of seconds; "0" fails at once. Unset: store.DefaultLockTimeout.
func lockTimeout() (time.Duration, error) {
	v := os.Getenv("AGENTSTATE_LOCK_TIMEOUT")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		s, serr := strconv.ParseFloat(v, 64)
		if serr != nil {
			return 0, usagef("AGENTSTATE_LOCK_TIMEOUT=%q: want a duration such as 10s or 500ms, or a number of seconds", v)
		}
		d = time.Duration(s * float64(time.Second))
	}
	if d < 0 {
		return 0, usagef("AGENTSTATE_LOCK_TIMEOUT=%q: must not be negative", v)
	}
	if d == 0 {
		d = -1 // store.Options: negative fails at once, zero is the default
	}
	return d, nil
}

// withRepo opens the store, runs fn and closes the store.
func (e *env) withRepo(fn func(r *repo.Repo) error) error {
	return e.withRepoMode(false, fn)
}

// withRepoRead is withRepo for commands that only read: the store is opened
// read-only (faster to open), falling back to a normal open when Badger
// refuses read-only (for example after an unclean shutdown, which a writer
// must replay first).
func (e *env) withRepoRead(fn func(r *repo.Repo) error) error {
	return e.withRepoMode(true, fn)
}

func (e *env) withRepoMode(readOnly bool, fn func(r *repo.Repo) error) error {
	var r *repo.Repo
	var err error
	if readOnly {
		dir, derr := e.storeDir()
		if derr != nil {
			return derr
		}
		lt, lerr := lockTimeout()
		if lerr != nil {
			return lerr
		}
		// A read-only open writes nothing. When Badger refuses it (an unclean
		// shutdown left logs a writer must replay), the writable open below
		// does the recovery, within the same free-space check as any write.
		r, err = repo.Open(dir, repo.Options{ReadOnly: true, LockTimeout: lt})
		if err != nil && !errors.Is(err, store.ErrInUse) && !errors.Is(err, store.ErrNotStore) && !errors.Is(err, store.ErrDiskFull) {
			r, err = e.open()
		}
	} else {
		r, err = e.open()
	}
	if err != nil {
		return err
	}
	err = fn(r)
	if cerr := r.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing store: %w", cerr)
	}
	return err
}

func (e *env) paint(code, s string) string {
	if !e.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Main runs the command line args and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	e.tty = isTerminal(stdout)
	e.color = e.tty && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	app := newApp(e)
	err := app.RunContext(ctx, args)
	if err == nil {
		return 0
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "agentstate: ")
	fmt.Fprintf(stderr, "agentstate: %s\n", oneLine(msg))
	var ue *usageError
	var ec cli.ExitCoder // only help raises these ("No help topic for ...")
	if errors.As(err, &ue) || errors.As(err, &ec) {
		return 2
	}
	return 1
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func newApp(e *env) *cli.App {
	app := &cli.App{
		Name:            "agentstate",
		Usage:           "a content-addressed, versioned store for AI agent brains",
		UsageText:       "agentstate [--store DIR] [--agent NAME] COMMAND [flags] [args]",
		Writer:          e.stdout,
		ErrWriter:       e.stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "store", Usage: "store directory (default: nearest .agentstate walking up)", EnvVars: []string{"AGENTSTATE_STORE"}, Destination: &e.storeFlag},
			&cli.StringFlag{Name: "agent", Usage: "agent to act on", Value: DefaultAgent, EnvVars: []string{"AGENTSTATE_AGENT"}, Destination: &e.agent},
		},
		Before: func(c *cli.Context) error {
			if err := refs.ValidateAgent(e.agent); err != nil {
				return usagef("--agent: %v", err)
			}
			return nil
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown command %q (see 'agentstate --help')", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Commands: commands(e),
	}
	for _, c := range app.Commands {
		c.OnUsageError = onUsageError // flag errors of every command are usage errors
	}
	return app
}

func onUsageError(c *cli.Context, err error, isSub bool) error {
	name := c.Command.Name
	if name == "" || name == c.App.Name {
		return usagef("%v (see 'agentstate --help')", err)
	}
	return usagef("%v (see 'agentstate %s --help')", err, name)
}

// nargs checks a command's positional argument count.
func nargs(c *cli.Context, min, max int) error {
	n := c.NArg()
	if n < min || (max >= 0 && n > max) {
		want := fmt.Sprintf("%d", min)
		switch {
		case max < 0:
			want = fmt.Sprintf("at least %d", min)
		case max != min:
			want = fmt.Sprintf("%d to %d", min, max)
		}
		return usagef("%s: takes %s argument(s), got %d (usage: agentstate %s)", c.Command.Name, want, n, strings.TrimSpace(c.Command.Name+" "+c.Command.ArgsUsage))
	}
	return nil
}

// revArg returns the i-th argument as a revision, HEAD when it is absent.
func revArg(c *cli.Context, i int) string {
	if rev := c.Args().Get(i); rev != "" {
		return rev
	}
	return "HEAD"
}
