package cli

import (
	"slices"
	"testing"

	"github.com/agentstate/agentstate/internal/front"
)

// frontMain is the agentstate command the scripts run: on Linux the real
// front end, which hands command lines to a server or starts
// agentstate-engine, exactly as the installed binaries do.
var frontMain = front.Main

// The front end finds the store by the same global flags as the command
// line (it cannot import this package: it must start light).
func TestFrontKnowsGlobalFlags(t *testing.T) {
	if !slices.Equal(slices.Sorted(slices.Values(front.GlobalFlags)), slices.Sorted(slices.Values(globalFlagNames))) {
		t.Fatalf("the front end knows the global flags %v, the command line has %v", front.GlobalFlags, globalFlagNames)
	}
}
