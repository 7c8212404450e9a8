//go:build checked

package main

import (
	"strings"

	"github.com/agentstate/agentstate/dag"
)

// checks says whether this build checks what it scans (the tag checked):
// it then links dag and objects as well as Badger.
const checks = true

// checkRecord checks a commit-graph record as a reader must before it
// uses it (its checksum, its commit decoded, the commit's CID computed:
// every block read is re-hashed before it is trusted) and returns the
// commit's message's first line, what 'log --oneline' prints of it.
func checkRecord(v []byte) (string, error) {
	rec, err := dag.DecodeGraphRecord(v)
	if err != nil {
		return "", err
	}
	_, cm, err := rec.Check()
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(cm.Message, "\n")
	return line, nil
}
