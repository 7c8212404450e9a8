package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentstate/agentstate/refs"
	"github.com/urfave/cli/v2"
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
		OnUsageError:    onUsageError,
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
