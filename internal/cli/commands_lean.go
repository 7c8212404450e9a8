//go:build lean

package cli

import "github.com/urfave/cli/v2"

// Lean: this is the lean engine (commands_full.go says what it leaves out).
const Lean = true

// fullOnly is empty: the lean engine hands these commands to the full one.
var fullOnly = map[string]func(*env) *cli.Command{}
