//go:build !linux

package cli

// frontMain is the agentstate command the scripts run: where the fast
// front end is not built, agentstate is the engine itself.
var frontMain = RunProcess
