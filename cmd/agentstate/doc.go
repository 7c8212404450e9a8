// Command agentstate is the git-like command line of the agentstate store:
// time-travel debugging, undo, fork and audit of an agent's brain.
//
// On Linux it is deliberately small (internal/front): against a served
// store it hands the command line to the server; otherwise it runs the
// engine, agentstate-engine, which must be installed beside it. Elsewhere
// agentstate is the engine itself (main_other.go).
package main
