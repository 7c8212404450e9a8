package inspect

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
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
func (e *RedactedError) Is(t error) bool { return t == ErrRedacted }

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
