package dag_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag"
)

// A task revision's readings, in the order tried: IDs may hold '@', '~'
// and '^' themselves.
func TestParseTaskRev(t *testing.T) {
	for rev, want := range map[string]string{
		"task:a":         "a",
		"task:a@2":       "a@2 | a [2]",
		"task:a~1":       "a~1 | a ~",
		"task:a@2^2":     "a@2^2 | a [2^2] | a@2 ^ | a [2] ^",
		"lumen@task:x~":  "lumen/x~ | lumen/x ~",
		"task:me@host@1": "me@host@1 | me@host [1]",
		"task:~1":        "~1",
	} {
		rds, ok, err := dag.ParseTaskRev(rev)
		if !ok || err != nil {
			t.Fatalf("%q: %v %v", rev, ok, err)
		}
		var parts []string
		for _, r := range rds {
			s := r.ID
			if r.Agent != "" {
				s = r.Agent + "/" + s
			}
			if r.HasAttempt {
				s += " [" + r.Attempt + "]"
			}
			for _, st := range r.Steps {
				if st.Parent > 0 {
					s += " ^"
				} else {
					s += " ~"
				}
			}
			parts = append(parts, s)
		}
		if got := strings.Join(parts, " | "); got != want {
			t.Errorf("%q: %s; want %s", rev, got, want)
		}
	}
	for _, rev := range []string{"HEAD", "bafyabcdefghij", "lumen@HEAD", "x:task:a", "a~1@task:b"} {
		if _, ok, _ := dag.ParseTaskRev(rev); ok {
			t.Errorf("%q read as a task revision", rev)
		}
	}
	if _, ok, err := dag.ParseTaskRev("lumen@task:"); !ok || !errors.Is(err, dag.ErrBadRev) {
		t.Errorf("empty ID: %v", err)
	}
	if got := dag.NearIDs("task-7", []string{"task-71", "task-8", "other", "task-7"}); strings.Join(got, ",") != "task-71,task-8" {
		t.Errorf("NearIDs: %v", got)
	}
}
