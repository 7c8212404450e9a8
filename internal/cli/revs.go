package cli

import "github.com/urfave/cli/v2"

// revArg returns the i-th argument as a revision, HEAD when it is absent.
func revArg(c *cli.Context, i int) string {
	if rev := c.Args().Get(i); rev != "" {
		return rev
	}
	return "HEAD"
}
