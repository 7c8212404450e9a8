package inspect

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/dag/sqlitedb/rowdiff"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/redaction"
)

// ErrRedacted: the value's content was removed on purpose by a redaction
// (dag/repo redact.go); every window shows it as redacted, with the record.
var ErrRedacted = errors.New("redacted")

// Redacted is the redaction of a value, as every window shows it.
type Redacted struct {
	ID     string            `json:"id"`     // the record's ID
	Reason string            `json:"reason"` // why
	Signer string            `json:"signer"` // hex ed25519 public key
	Time   int64             `json:"time"`
	Record *redaction.Record `json:"record"` // the signed record's line
}

// String is the one line every text window prints for it.
func (r *Redacted) String() string {
	return fmt.Sprintf("redacted %s by %.16s…: %s (record %.16s…)", time.Unix(r.Time, 0).UTC().Format(time.RFC3339), r.Signer, r.Reason, r.ID)
}

// RedactedError is a read of a redacted value's content.
type RedactedError struct {
	Key      string
	Commit   objects.CID
	Value    objects.CID
	Redacted *Redacted
}

func (e *RedactedError) Error() string {
	return fmt.Sprintf("%q at %s is %s", e.Key, e.Commit.Short(), e.Redacted)
}

// Is makes it ErrRedacted and ErrNotFound (its content is not there).
func (e *RedactedError) Is(t error) bool { return t == ErrRedacted || t == ErrNotFound }

// RedactionOf returns the redaction of the value c, or nil when no honoured
// record names it. A store with no record answers from one prefix step.
func (v *View) RedactionOf(ctx context.Context, c objects.CID) (*Redacted, error) {
	if c.IsZero() {
		return nil, nil
	}
	ri, ok, err := v.R.RedactionOf(ctx, c)
	if err != nil || !ok {
		return nil, classify(err)
	}
	return &Redacted{ID: ri.ID, Reason: ri.Record.Reason, Signer: hex.EncodeToString(ri.Record.Signer), Time: ri.Record.Time, Record: ri.Record}, nil
}

// sizeOf is a value's content size, and its redaction: a redacted raw
// value's size is gone with it (0); a chunked one's file node keeps it.
func (v *View) sizeOf(ctx context.Context, c objects.CID) (uint64, *Redacted, error) {
	red, err := v.RedactionOf(ctx, c)
	if err != nil {
		return 0, nil, err
	}
	if red != nil && c.Codec() == objects.CodecRaw {
		return 0, red, nil
	}
	n, err := v.size(ctx, c)
	return n, red, err
}

// Redactions lists an agent's redaction records ("" for every agent), as
// `agentstate redactions` and the other windows show them.
func (v *View) Redactions(ctx context.Context, agent string) ([]repo.RedactionInfo, error) {
	ris, err := v.R.Redactions(ctx, agent)
	if ris == nil {
		ris = []repo.RedactionInfo{}
	}
	return ris, classify(err)
}

// Redacted lists the keys of commit's tree whose values are redacted.
func (v *View) Redacted(ctx context.Context, commit objects.CID) ([]string, error) {
	if ok, err := v.R.HasRedactions(ctx); err != nil || !ok {
		return nil, classify(err)
	}
	t, err := v.R.Tree(ctx, commit)
	if err != nil {
		return nil, classify(err)
	}
	var out []string
	for en, err := range t.Entries(ctx, "") {
		if err != nil {
			return nil, classify(err)
		}
		if red, err := v.RedactionOf(ctx, en.Value); err != nil {
			return nil, err
		} else if red != nil {
			out = append(out, en.Key)
		}
	}
	return out, nil
}

// RedactRowReport is what RedactRow did (or would do).
type RedactRowReport struct {
	Key   string `json:"key"`
	Table string `json:"table"`
	Row   string `json:"row"`
	// New is the commit written on HEAD without the row (zero: HEAD does
	// not hold it, or a dry run).
	New objects.CID `json:"new,omitzero"`
	// Versions are the values of Key in the agent's history that held the
	// row, whose pages holding it are redacted.
	Versions  []objects.CID     `json:"versions"`
	Redaction repo.RedactReport `json:"redaction"`
}

// RedactRow erases one row (ref: TABLE:PK, as RowHistory takes it) of
// key's SQLite value from the agent's history: a commit on HEAD whose value
// is HEAD's database without the row (deleted with SQLite's secure_delete,
// so its bytes are zeroed, by compare-and-swap as every edit), then a
// redaction (signed by signer) of the pages that held the row in every
// older version: the pages a secure delete of the row changes in that
// version, but the first (the file header and the schema's root). Those
// versions read as redacted from then on; their other pages stay. A version
// stored unchunked (a database up to 1 MiB is one block) is redacted whole.
func (v *View) RedactRow(ctx context.Context, agent, key, ref, reason string, signer ed25519.PrivateKey, o WriteOptions, dryRun bool) (RedactRowReport, error) {
	out := RedactRowReport{Key: key, Row: ref}
	table, pk, err := ParseRowRef(ref)
	if err != nil {
		return out, err
	}
	out.Table = table
	if err := objects.ValidateKey(key); err != nil {
		return out, classify(err)
	}
	if _, err := v.checkAgent(ctx, agent); err != nil {
		return out, err
	}
	versions, err := v.R.KeyVersions(ctx, agent, key)
	if err != nil {
		return out, classify(err)
	}
	seen := map[objects.CID]bool{}
	blocks := map[objects.CID][]objects.CID{}
	for _, val := range versions {
		if seen[val] {
			continue
		}
		seen[val] = true
		if red, err := v.RedactionOf(ctx, val); err != nil {
			return out, err
		} else if red != nil {
			continue // redacted already (whole, or pages of it)
		}
		pages, held, err := v.rowPages(ctx, val, key, table, pk)
		if err != nil {
			return out, err
		}
		if held {
			blocks[val] = pages
			out.Versions = append(out.Versions, val)
		}
	}
	if len(blocks) == 0 {
		return out, &kindError{ErrNotFound, fmt.Errorf("redact: no version of %q in %s's history holds row %s (or they are redacted already): %w", key, agent, ref, repo.ErrNothingToRedact)}
	}
	slices.SortFunc(out.Versions, func(a, b objects.CID) int { return strings.Compare(a.String(), b.String()) })
	if !dryRun {
		if out.New, err = v.eraseRowAtHead(ctx, agent, key, ref, table, pk, o); err != nil {
			return out, err
		}
	}
	out.Redaction, err = v.R.Redact(ctx, repo.RedactRequest{Agent: agent, Key: key, Blocks: blocks,
		Reason: "row " + ref + ": " + reason, DryRun: dryRun}, signer)
	return out, classify(err)
}

// rowPages returns the raw blocks of the SQLite value val that hold row pk
// of table (held false: val does not hold it).
func (v *View) rowPages(ctx context.Context, val objects.CID, key, table string, pk []SQLCell) ([]objects.CID, bool, error) {
	row, err := v.rowOf(ctx, val, key, table, pk)
	if err != nil || row == nil {
		return nil, false, err
	}
	if val.Codec() == objects.CodecRaw {
		return []objects.CID{val}, true, nil // one block: all of it
	}
	db, err := sqlitedb.Open(ctx, v.R.Blocks, val)
	if err != nil {
		return nil, false, classify(err)
	}
	stmt, err := rowdiff.RestoreSQL(ctx, db, table, pk, nil)
	db.Close()
	if err != nil {
		return nil, false, badf("redact: row %s of %q: %v", table, key, err)
	}
	erased, err := sqlitedb.ApplyErasing(ctx, v.R.Blocks, val, stmt)
	if err != nil {
		return nil, false, badf("redact: row of %q: %v", key, err)
	}
	_, newBlocks := objects.NewFileValue(erased)
	keep := map[objects.CID]bool{}
	for _, b := range newBlocks {
		keep[b.CID] = true
	}
	p, err := sqlitedb.OpenPages(ctx, v.R.Blocks, val)
	if err != nil {
		return nil, false, classify(err)
	}
	first, err := p.PageCID(ctx, 1)
	p.Close()
	if err != nil {
		return nil, false, classify(err)
	}
	keep[first] = true // the header and the schema's root: the database's shape
	leaves, err := v.R.ValueLeaves(ctx, val)
	if err != nil {
		return nil, false, classify(err)
	}
	var out []objects.CID
	for _, c := range leaves {
		if !keep[c] {
			out = append(out, c)
		}
	}
	return out, true, nil
}

// eraseRowAtHead writes a commit on agent's HEAD whose key is its database
// without the row (zero when HEAD does not hold it).
func (v *View) eraseRowAtHead(ctx context.Context, agent, key, ref, table string, pk []SQLCell, o WriteOptions) (objects.CID, error) {
	msg := o.Message
	if msg == "" {
		msg = "redact row " + ref + " of " + key
	}
	meta := map[string]string{}
	for k, val := range o.Metadata {
		meta[k] = val
	}
	meta["op"], meta["redactRow"] = "redact", key+":"+ref
	defer v.R.HoldWrites()()
	id, err := v.R.Edit(ctx, repo.EditRequest{Agent: agent, Message: msg, Metadata: meta,
		Edit: func(ctx context.Context, t *objects.Tree) (bool, error) {
			cur, ok, err := t.Get(ctx, key)
			if err != nil || !ok {
				return false, err
			}
			row, err := v.rowOf(ctx, cur, key, table, pk)
			if err != nil || row == nil {
				return false, err
			}
			db, err := sqlitedb.Open(ctx, v.R.Blocks, cur)
			if err != nil {
				return false, headSQLError(key, err)
			}
			stmt, err := rowdiff.RestoreSQL(ctx, db, table, pk, nil)
			db.Close()
			if err != nil {
				return false, badf("redact: row %s of %q: %v", ref, key, err)
			}
			data, err := sqlitedb.ApplyErasing(ctx, v.R.Blocks, cur, stmt)
			if err != nil {
				return false, badf("redact: row %s of %q: %v", ref, key, err)
			}
			val, _, err := objects.WriteValue(ctx, v.R.Blocks, bytes.NewReader(data))
			if err != nil {
				return false, err
			}
			return t.Put(ctx, key, val)
		}})
	if errors.Is(err, repo.ErrNoChange) {
		return objects.CID{}, nil // HEAD does not hold the row
	}
	return id, classify(err)
}
