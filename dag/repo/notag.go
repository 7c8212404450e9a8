package repo

import (
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/refs"
)

// tagRev is a revision read as [AGENT@]NAME{~N|^N}, NAME a tag's name.
type tagRev struct {
	prefix, agent, name, suffix string
}

// splitTagRev reads rev as a tag revision of agent (AGENT@ names another);
// not ok when its base cannot be a tag's name (HEAD, empty, not a name).
func splitTagRev(agent, rev string) (tagRev, bool) {
	t := tagRev{agent: agent, name: rev}
	if i := strings.IndexByte(t.name, '@'); i >= 0 {
		t.prefix, t.name = t.name[:i+1], t.name[i+1:]
		t.agent = t.prefix[:i]
	}
	if j := strings.IndexAny(t.name, "~^"); j >= 0 {
		t.name, t.suffix = t.name[:j], t.name[j:]
	}
	if t.name == "" || t.name == "HEAD" || refs.ValidateAgent(t.agent) != nil || refs.ValidateAgent(t.name) != nil {
		return tagRev{}, false
	}
	return t, true
}

// NoTagError is a name that is no tag of the agent: a revision that reads
// as a tag's name but neither is one nor parses as a revision (Err, which
// it wraps and whose words it keeps), or a tag asked for by name.
type NoTagError struct {
	Agent, Name string
	Err         error // the revision's own error; nil: no tag of that name
}

func (e *NoTagError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("agent %s has no tag %q", e.Agent, e.Name)
}

func (e *NoTagError) Unwrap() error { return e.Err }
