package runtime

import (
	"context"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
)

// Redact removes the content of an agent's values from the store for good
// (a secret an agent wrote, personal data a user asked to erase): the key's
// value at req.At, every version of it (req.All), or a value CID wherever
// it appears (req.Value), with a record signed by the runtime's operator
// key (docs/format.md §10). Every commit id, bundle hash and receipt stays
// valid; chunks a version left unredacted shares stay (the report names
// those versions). It waits for the tasks in flight, as gc does. Copies
// made before (clones, exports, histories already pushed) keep the content;
// the agent's next history push publishes the history anew without it.
func (rt *Runtime) Redact(ctx context.Context, req repo.RedactRequest) (repo.RedactReport, error) {
	return rt.repo.Redact(ctx, req, rt.signer)
}

// RedactRow erases one row (TABLE:PK) of a SQLite value (key, e.g.
// memory.db) from the agent's history: a commit on HEAD without the row,
// then the pages that held it redacted in every older version
// (inspect.View.RedactRow), the record signed by the operator key.
func (rt *Runtime) RedactRow(ctx context.Context, agent, key, row, reason string) (inspect.RedactRowReport, error) {
	return inspect.New(rt.repo).RedactRow(ctx, agent, key, row, reason, rt.signer, inspect.WriteOptions{}, false)
}
