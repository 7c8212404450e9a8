package dag

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentstate/agentstate/objects"
	"github.com/multiformats/go-base32"
)

var (
	ErrBadRev    = errors.New("dag: invalid revision")
	ErrUnknown   = errors.New("dag: unknown revision")
	ErrAmbiguous = errors.New("dag: ambiguous revision")
	ErrNotCommit = errors.New("dag: not a commit")
)

// Step is one ancestry step of a revision.
type Step struct {
	FirstParentN int // ~N: walk N first parents (0 when Parent is used)
	Parent       int // ^N: take the N-th parent (1-based); 0 when unused
}

// Rev is a parsed revision.
type Rev struct {
	Agent string // "" for the current agent
	Base  string // "HEAD" or a (possibly abbreviated) CID
	Steps []Step
}

// MinAbbrev is the shortest accepted CID abbreviation.
const MinAbbrev = 10

// ParseRev parses [AGENT@]BASE{~N|^N|~|^}.
func ParseRev(s string) (Rev, error) {
	orig := s
	if s == "" {
		return Rev{}, fmt.Errorf("%w: empty revision", ErrBadRev)
	}
	var r Rev
	if i := strings.IndexByte(s, '@'); i >= 0 {
		r.Agent, s = s[:i], s[i+1:]
		if r.Agent == "" {
			return Rev{}, fmt.Errorf("%w: %q: empty agent before '@'", ErrBadRev, orig)
		}
	}
	end := strings.IndexAny(s, "~^")
	if end < 0 {
		end = len(s)
	}
	r.Base, s = s[:end], s[end:]
	switch {
	case r.Base == "" && r.Agent != "":
		r.Base = "HEAD"
	case r.Base == "":
		return Rev{}, fmt.Errorf("%w: %q: missing HEAD or commit id", ErrBadRev, orig)
	case r.Base == "HEAD":
	default:
		if len(r.Base) < MinAbbrev {
			return Rev{}, fmt.Errorf("%w: %q: a commit id needs at least %d characters (or use HEAD, HEAD~N)", ErrBadRev, orig, MinAbbrev)
		}
		for _, ch := range r.Base {
			if !(ch >= 'a' && ch <= 'z' || ch >= '2' && ch <= '7') {
				return Rev{}, fmt.Errorf("%w: %q: %q is not a base32 CID character", ErrBadRev, orig, ch)
			}
		}
		if r.Base[0] != 'b' {
			return Rev{}, fmt.Errorf("%w: %q: CIDs start with 'b' (base32 CIDv1)", ErrBadRev, orig)
		}
	}
	steps, err := parseSteps(orig, s)
	if err != nil {
		return Rev{}, err
	}
	r.Steps = steps
	return r, nil
}

// parseSteps parses a revision's ~N and ^N steps (s is what follows the
// base; orig is the whole revision, for messages).
func parseSteps(orig, s string) ([]Step, error) {
	var steps []Step
	for s != "" {
		op := s[0]
		if op != '~' && op != '^' {
			return nil, fmt.Errorf("%w: %q: unexpected %q (use ~N or ^N after the base)", ErrBadRev, orig, s)
		}
		s = s[1:]
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n := 1
		if j > 0 {
			v, err := strconv.Atoi(s[:j])
			if err != nil || v > 1<<20 {
				return nil, fmt.Errorf("%w: %q: bad number %q", ErrBadRev, orig, s[:j])
			}
			n = v
		}
		s = s[j:]
		if op == '~' {
			steps = append(steps, Step{FirstParentN: n})
		} else {
			if n == 0 {
				steps = append(steps, Step{FirstParentN: 0})
				continue
			}
			steps = append(steps, Step{Parent: n})
		}
	}
	return steps, nil
}

// Resolver gives ParseRev'd revisions meaning in a store.
type Resolver struct {
	Blocks objects.BlockStore
	// Head returns an agent's HEAD commit.
	Head func(ctx context.Context, agent string) (objects.CID, error)
	// WithPrefix returns stored CIDs whose binary form starts with the given bytes.
	WithPrefix func(ctx context.Context, prefix []byte) ([]objects.CID, error)
	// Task returns the commit a task landed (a task revision's base); an
	// error wrapping ErrNoTask says no task of that reading landed. Nil:
	// task revisions are refused.
	Task func(ctx context.Context, t TaskRev) (objects.CID, error)
}

// Resolve turns a revision string into a commit CID, for defaultAgent unless
// the revision names another agent.
func (rs *Resolver) Resolve(ctx context.Context, defaultAgent, s string) (objects.CID, error) {
	if readings, ok, err := ParseTaskRev(s); ok {
		if err != nil {
			return objects.CID{}, err
		}
		return rs.resolveTask(ctx, defaultAgent, s, readings)
	}
	r, err := ParseRev(s)
	if err != nil {
		return objects.CID{}, err
	}
	agent := r.Agent
	if agent == "" {
		agent = defaultAgent
	}
	var c objects.CID
	if r.Base == "HEAD" {
		if c, err = rs.Head(ctx, agent); err != nil {
			return objects.CID{}, err
		}
	} else if c, err = rs.expand(ctx, r.Base); err != nil {
		return objects.CID{}, err
	}
	return rs.walkSteps(ctx, s, c, r.Steps)
}

// resolveTask resolves a task revision: the first of its readings that
// names a landed task, then that reading's steps.
func (rs *Resolver) resolveTask(ctx context.Context, defaultAgent, s string, readings []TaskRev) (objects.CID, error) {
	if rs.Task == nil {
		return objects.CID{}, fmt.Errorf("%w: %q: this store does not resolve task revisions", ErrBadRev, s)
	}
	var last error
	for _, rd := range readings {
		if rd.Agent == "" {
			rd.Agent = defaultAgent
		}
		c, err := rs.Task(ctx, rd)
		if errors.Is(err, ErrNoTask) {
			last = err
			continue
		}
		if err != nil {
			return objects.CID{}, err
		}
		return rs.walkSteps(ctx, s, c, rd.Steps)
	}
	return objects.CID{}, last
}

// walkSteps reads commit c and takes a revision's steps from it.
func (rs *Resolver) walkSteps(ctx context.Context, s string, c objects.CID, steps []Step) (objects.CID, error) {
	cm, err := ReadCommit(ctx, rs.Blocks, c)
	if err != nil {
		return objects.CID{}, fmt.Errorf("revision %q: %w", s, err)
	}
	for _, st := range steps {
		for i := 0; i < st.FirstParentN; i++ {
			if len(cm.Parents) == 0 {
				return objects.CID{}, fmt.Errorf("%w: %q: commit %s has no parent (history is shorter)", ErrUnknown, s, c.Short())
			}
			c = cm.Parents[0]
			if cm, err = ReadCommit(ctx, rs.Blocks, c); err != nil {
				return objects.CID{}, err
			}
		}
		if st.Parent > 0 {
			if st.Parent > len(cm.Parents) {
				return objects.CID{}, fmt.Errorf("%w: %q: commit %s has %d parent(s)", ErrUnknown, s, c.Short(), len(cm.Parents))
			}
			c = cm.Parents[st.Parent-1]
			if cm, err = ReadCommit(ctx, rs.Blocks, c); err != nil {
				return objects.CID{}, err
			}
		}
	}
	return c, nil
}

// expand resolves a full or abbreviated CID string to a stored commit.
func (rs *Resolver) expand(ctx context.Context, s string) (objects.CID, error) {
	if c, err := objects.ParseCID(s); err == nil {
		return c, nil
	}
	// Decode the byte-aligned part of the abbreviation (after the multibase
	// 'b') to narrow the scan, then match on the string form.
	nbytes := (len(s) - 1) * 5 / 8
	raw, err := base32.RawStdEncoding.DecodeString(strings.ToUpper(s[1:])[:nbytes*8/5])
	if err != nil || len(raw) < 4 {
		raw = nil
	}
	cands, err := rs.WithPrefix(ctx, raw)
	if err != nil {
		return objects.CID{}, err
	}
	var match []objects.CID
	for _, c := range cands {
		if strings.HasPrefix(c.String(), s) && c.Codec() == objects.CodecDagCBOR {
			if _, err := ReadCommit(ctx, rs.Blocks, c); err == nil {
				match = append(match, c)
			}
		}
	}
	switch len(match) {
	case 0:
		return objects.CID{}, fmt.Errorf("%w: no commit matches %q", ErrUnknown, s)
	case 1:
		return match[0], nil
	default:
		return objects.CID{}, fmt.Errorf("%w: %q matches %d commits; give more characters", ErrAmbiguous, s, len(match))
	}
}

// ReadCommit reads and decodes a commit, with a clear error when c names
// something else.
func ReadCommit(ctx context.Context, bs objects.BlockStore, c objects.CID) (*objects.Commit, error) {
	cm, _, err := readCommit(ctx, bs, c)
	return cm, err
}

// readCommit reads and decodes a commit, returning its bytes too.
func readCommit(ctx context.Context, bs objects.BlockStore, c objects.CID) (*objects.Commit, []byte, error) {
	if c.Codec() != objects.CodecDagCBOR {
		return nil, nil, fmt.Errorf("%w: %s is a value", ErrNotCommit, c)
	}
	cache, _ := bs.(*CommitCache)
	if cache != nil {
		if cm, data, ok := cache.get(c); ok {
			return cm, data, nil
		}
	}
	data, err := bs.Get(ctx, c)
	if err != nil {
		if errors.Is(err, objects.ErrNotFound) {
			return nil, nil, fmt.Errorf("%w: commit %s is not in this store", ErrUnknown, c)
		}
		return nil, nil, err
	}
	cm, err := objects.DecodeCommit(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrNotCommit, c, err)
	}
	if cache != nil {
		cache.keep(c, cm, data)
	}
	return cm, data, nil
}
