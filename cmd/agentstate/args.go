package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

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
