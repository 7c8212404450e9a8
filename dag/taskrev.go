package dag

import (
	"fmt"
	"strings"
)

// ErrNoTask: a task revision names no task that landed. It wraps
// ErrUnknown, so it is an unknown revision to errors.Is.
var ErrNoTask = fmt.Errorf("%w: no such task", ErrUnknown)

// TaskPrefix begins a task revision.
const TaskPrefix = "task:"

// TaskRev is one reading of a task revision
// [AGENT@]task:ID[@ATTEMPT][~N|^N…]: the landing of task ID by AGENT (the
// latest one, or the latest of attempt ATTEMPT), then steps as after any
// revision's base.
type TaskRev struct {
	Agent      string // "" for the current agent
	ID         string
	Attempt    string
	HasAttempt bool
	Steps      []Step
}

// String writes the reading back as a revision.
func (t TaskRev) String() string {
	s := TaskPrefix + t.ID
	if t.Agent != "" {
		s = t.Agent + "@" + s
	}
	if t.HasAttempt {
		s += "@" + t.Attempt
	}
	return s
}

// IsTaskRev reports whether s is written as a task revision.
func IsTaskRev(s string) bool {
	_, _, ok := splitTaskRev(s)
	return ok
}

// splitTaskRev returns a task revision's agent ("" when none) and what
// follows "task:".
func splitTaskRev(s string) (agent, body string, ok bool) {
	if body, ok := strings.CutPrefix(s, TaskPrefix); ok {
		return "", body, true
	}
	// An agent name has no '@' and no ':', so "AGENT@task:" is unambiguous.
	if i := strings.IndexByte(s, '@'); i > 0 && strings.HasPrefix(s[i+1:], TaskPrefix) && !strings.ContainsAny(s[:i], ":~^") {
		return s[:i], s[i+1+len(TaskPrefix):], true
	}
	return "", "", false
}

// ParseTaskRev parses a task revision into the readings it allows, in the
// order they are tried: a task ID may itself contain '@', '~' and '^'
// (runtime task IDs are any printable text), so the whole text after
// "task:" is first taken as the ID; then a trailing run of ~N/^N steps is
// taken off; then, of either, what follows the last '@' is taken as the
// attempt. ok is false when s is not written as a task revision; err is set
// when it is but names no task at all.
func ParseTaskRev(s string) (readings []TaskRev, ok bool, err error) {
	agent, body, ok := splitTaskRev(s)
	if !ok {
		return nil, false, nil
	}
	if body == "" {
		return nil, true, fmt.Errorf("%w: %q: a task ID must follow %q", ErrBadRev, s, TaskPrefix)
	}
	bases := []TaskRev{{Agent: agent, ID: body}}
	if k := stepSuffix(body); k > 0 && k < len(body) {
		steps, err := parseSteps(s, body[k:])
		if err != nil {
			return nil, true, err
		}
		bases = append(bases, TaskRev{Agent: agent, ID: body[:k], Steps: steps})
	}
	for _, b := range bases {
		readings = append(readings, b)
		if j := strings.LastIndexByte(b.ID, '@'); j > 0 {
			a := b
			a.ID, a.Attempt, a.HasAttempt = b.ID[:j], b.ID[j+1:], true
			readings = append(readings, a)
		}
	}
	return readings, true, nil
}

// stepSuffix returns where the trailing run of ~N and ^N steps of s
// begins (len(s) when there is none).
func stepSuffix(s string) int {
	k := len(s)
	for i := len(s); i > 0; {
		j := i
		for j > 0 && s[j-1] >= '0' && s[j-1] <= '9' {
			j--
		}
		if j == 0 || (s[j-1] != '~' && s[j-1] != '^') {
			break
		}
		k, i = j-1, j-1
	}
	return k
}

// NoTaskError is ErrNoTask with what the store does have: the attempts
// of the task that landed (when an attempt was asked for), and task IDs
// close to the one asked for.
type NoTaskError struct {
	Rev      TaskRev
	Attempts []string // the task's attempts that landed, when Rev.HasAttempt
	Near     []string // task IDs that landed, close to Rev.ID
}

func (e *NoTaskError) Error() string {
	var b strings.Builder
	if e.Rev.HasAttempt && len(e.Attempts) > 0 {
		fmt.Fprintf(&b, "task %q of agent %s has no landed attempt %q (its attempts: %s)", e.Rev.ID, e.Rev.Agent, e.Rev.Attempt, quoteList(e.Attempts))
		return b.String()
	}
	fmt.Fprintf(&b, "no task %q landed for agent %s", e.Rev.ID, e.Rev.Agent)
	if e.Rev.HasAttempt {
		fmt.Fprintf(&b, " (attempt %q)", e.Rev.Attempt)
	}
	if len(e.Near) > 0 {
		fmt.Fprintf(&b, "; did you mean %s?", quoteList(e.Near))
	}
	return b.String()
}

func (e *NoTaskError) Unwrap() error { return ErrNoTask }

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// NearIDs returns up to three of ids closest to id (by edit distance,
// nearest first, at most a third of id's length and at least 2 apart),
// or that id is a prefix of.
func NearIDs(id string, ids []string) []string {
	type cand struct {
		s string
		d int
	}
	limit := max(2, len([]rune(id))/3)
	var cs []cand
	seen := map[string]bool{}
	for _, s := range ids {
		if seen[s] || s == id {
			continue
		}
		seen[s] = true
		d := editDistance(id, s, limit)
		if strings.HasPrefix(s, id) && d > limit {
			d = limit
		}
		if d <= limit {
			cs = append(cs, cand{s, d})
		}
	}
	// Nearest first, then by ID; three at most.
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && (cs[j].d < cs[j-1].d || cs[j].d == cs[j-1].d && cs[j].s < cs[j-1].s); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
	var out []string
	for _, c := range cs[:min(3, len(cs))] {
		out = append(out, c.s)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b in runes, or more
// than limit when it exceeds limit.
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
