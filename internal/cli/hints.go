package cli

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/refs"
)

// hint is what the command line adds to an error it prints: the command,
// flag or environment variable that answers it. The libraries say what went
// wrong in their own words, with a sentinel or a typed error to match; only
// the command line knows its own flags, so their names are added here, in
// one place, and nowhere below it. The first match wins: the more specific
// errors come first.
func hint(err error) string {
	var notStore *repo.NotStoreError
	var unbound *snapshot.UnboundError
	var rowConflict *inspect.RowConflictError
	switch {
	case errors.As(err, &notStore) && notStore.HalfMade:
		return "run 'agentstate init' to make it anew"
	case errors.Is(err, repo.ErrNotStore):
		return "run 'agentstate init' to create one"
	case errors.Is(err, repo.ErrNoStore):
		return "run 'agentstate init', or pass --store DIR / set AGENTSTATE_STORE"
	case errors.Is(err, repo.ErrInUse):
		return "another agentstate command or runtime holds it: wait for it to finish, or raise AGENTSTATE_LOCK_TIMEOUT"
	case errors.Is(err, repo.ErrNotFastForward):
		return "--ff-only refuses a merge"
	case errors.Is(err, repo.ErrNotInHistory):
		return "'agentstate log' lists the agent's commits; --agent names another agent"
	case errors.As(err, new(*repo.UntrustedRedactionError)):
		var u *repo.UntrustedRedactionError
		errors.As(err, &u)
		return "if you trust that key to redact " + u.Agent + "'s values: 'agentstate trust add --agent " + u.Agent + " " + u.Signer + "', then try again"
	case errors.Is(err, repo.ErrNothingToRedact):
		return "'agentstate redactions' lists what is redacted; 'agentstate log -- KEY' the key's versions"
	case errors.Is(err, repo.ErrDamaged):
		return "run 'agentstate verify'"
	case errors.As(err, &rowConflict):
		return "see the row's history with 'agentstate log --row " + rowConflict.Row + " -- " + rowConflict.Key + "'"
	case errors.Is(err, inspect.ErrRevertConflict):
		return "revert only the other keys with 'agentstate revert REV -- KEY...', or see 'agentstate revert --dry-run REV'"
	case errors.Is(err, sqlitedb.ErrRefused):
		return "'agentstate sql' only reads: one SELECT, or a PRAGMA that reports, at a time"
	case errors.Is(err, sqlitedb.ErrTimeout):
		return "raise --timeout, or narrow the query"
	case errors.Is(err, sqlitedb.ErrTooLarge):
		return "add LIMIT, or select fewer columns"
	case errors.As(err, new(*noAgentNamedError)):
		return "name one with --agent AGENT or AGENTSTATE_AGENT, or set one for this store with 'agentstate use AGENT'"
	case errors.Is(err, refs.ErrNoAgent):
		return "list agents with 'agentstate agents'; create one with 'commit', 'put' or 'fork'"
	case errors.As(err, &unbound):
		return "'restore --blob " + string(unbound.Blob) + "' restores exactly that blob"
	}
	return ""
}

// withHint is err's message with its hint, if it has one, in parentheses.
func withHint(err error) string {
	if h := hint(err); h != "" {
		return err.Error() + " (" + h + ")"
	}
	return err.Error()
}

// nearError is a not-found error with the names close to the one it names.
type nearError struct {
	err  error
	near []string
}

func (e *nearError) Error() string {
	return e.err.Error() + "; did you mean " + quoteNames(e.near) + "?"
}

func (e *nearError) Unwrap() error { return e.err }

func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// packagePrefix matches the name of a library package (or of its part)
// that starts an error's words, "refs: no such agent", at the start of a
// message or after a wrapping ": ". The libraries keep their prefixes (a
// log, a test or a caller in Go reads where an error came from); a person
// at the command line gets the message without them, once, where the
// command line prints an error (env.main). The words a prefix leads, and
// every other word, are kept: "reading the store: x" keeps its "store: ".
// It is compiled when an error is printed, not at every process's start.
var packagePrefix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|: )(?:(?:atomicfile|badger|dag|envelope|execwire|export|history|httpstore|walrus/httpstore|inspect|localstore|memstore|objects|receipt|refs|remote|repo|rowdiff|rpcwire|snapshot|sqlitedb|storage|store|sync|tape|tarball|textdiff): )+`)
})

// forPeople is an error message without its package prefixes.
func forPeople(msg string) string {
	return packagePrefix().ReplaceAllString(msg, "$1")
}
