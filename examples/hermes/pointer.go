package main

import "github.com/agentstate/agentstate/export/snapshot"

// pointerDir keeps the per-agent snapshot pointer files in dir: the offline
// stand-in for the agent's ENS agent-snapshot record.
func pointerDir(dir string) snapshot.Pointer { return snapshot.FilePointer{Dir: dir} }
