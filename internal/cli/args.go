package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// nargs checks a command's positional argument count (see checkArgCount).
func nargs(c *cli.Context, min, max int) error {
	return checkArgCount(c.Command.Name, c.Command.ArgsUsage, c.NArg(), min, max)
}

// checkArgCount is a usage error unless min <= n <= max (max < 0: no upper
// bound), naming the command and its usage line.
func checkArgCount(name, argsUsage string, n, min, max int) error {
	if n >= min && (max < 0 || n <= max) {
		return nil
	}
	want := fmt.Sprintf("%d", min)
	switch {
	case max < 0:
		want = fmt.Sprintf("at least %d", min)
	case max != min:
		want = fmt.Sprintf("%d to %d", min, max)
	}
	return usagef("%s: takes %s argument(s), got %d (usage: agentstate %s)", name, want, n, strings.TrimSpace(name+" "+argsUsage))
}
