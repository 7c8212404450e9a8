package repo

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentstate/agentstate/refs"
)

// Keys a store trusts: ed25519 public keys that verify receipts and sign
// histories (docs/security.md, "Trusted keys"). Three kinds of metadata
// record, each named by its prefix, the 64 lowercase hex digits of the key
// last:
//
//   - OperatorKeyPrefix + KEY: a key trusted for every agent. The runtime
//     records its own operator key; `trust add KEY` records one. It
//     verifies every agent's receipts and may sign any agent's history.
//   - AgentKeyPrefix + AGENT "/" KEY: a key trusted for one agent, by
//     `trust add --agent AGENT KEY`, or the signer of a history of AGENT
//     that a restore accepted (given with --pub, or already trusted for
//     it). It verifies AGENT's receipts and may sign AGENT's history.
//   - LearnedKeyPrefix + AGENT "/" KEY: a key that came from another store
//     with AGENT's receipts (a clone, pull or send of AGENT; the operator
//     keys a history manifest of AGENT names). It verifies AGENT's
//     receipts and signs nothing: a restore never takes a history signed
//     by a key this store only learned.
//
// Nothing a transfer brings becomes trusted beyond the agent it came with,
// and no key becomes a history signer except by an operator's act.
const (
	OperatorKeyPrefix = "runtime/operator/"
	AgentKeyPrefix    = "trust/"
	LearnedKeyPrefix  = "learned/"
)

// KeyUse is what a key is trusted for.
type KeyUse int

const (
	// KeyVerifiesReceipts: the key verifies an agent's receipts.
	KeyVerifiesReceipts KeyUse = iota
	// KeySignsHistory: the key may sign an agent's history manifest.
	KeySignsHistory
)

// Kinds of KeyRecord.
const (
	KeyOperator = "operator" // every agent
	KeyAgent    = "agent"    // one agent: verifies and signs
	KeyLearned  = "learned"  // one agent: verifies receipts only
)

// KeyRecord is one trusted or learned key.
type KeyRecord struct {
	Key    string `json:"key"`             // 64 lowercase hex digits
	Kind   string `json:"kind"`            // KeyOperator, KeyAgent, KeyLearned
	Agent  string `json:"agent,omitempty"` // "" for KeyOperator: every agent
	Source string `json:"source,omitempty"`
	Time   string `json:"time,omitempty"` // RFC 3339
}

// keyValue is the value of an agent or learned key record.
type keyValue struct {
	Time   string `json:"time"`
	Source string `json:"source,omitempty"`
}

// ErrBadKeyOp: a key operation with a malformed key, agent or source.
var ErrBadKeyOp = errors.New("repo: bad trusted-key operation")

// ErrNotOperator: a served store's client that is not its operator (a
// token, not the Unix socket) asked to trust or untrust a key.
var ErrNotOperator = errors.New("repo: only the store's operator may change the keys it trusts")

// Key operations (KeyOp.Op).
const (
	KeyOpTrust   = "trust"   // trust Keys for Agent ("" every agent)
	KeyOpUntrust = "untrust" // remove them (Agent's trusted and learned records)
	KeyOpLearn   = "learn"   // record Keys as learned with Agent's receipts from Source
)

// KeyOp changes the keys a store trusts.
type KeyOp struct {
	Op     string   `json:"op"`
	Agent  string   `json:"agent,omitempty"`
	Keys   []string `json:"keys"`             // 64 lowercase hex digits each
	Source string   `json:"source,omitempty"` // where the keys came from, for the record
}

// maxKeyOpKeys and maxKeySource bound one KeyOp.
const (
	maxKeyOpKeys = 1024
	maxKeySource = 512
)

// Check validates op: a known operation, 1 to 1024 keys of 64 lowercase hex
// digits, a valid agent (required to learn), a short UTF-8 source.
func (op *KeyOp) Check() error {
	switch op.Op {
	case KeyOpTrust, KeyOpUntrust:
	case KeyOpLearn:
		if op.Agent == "" {
			return fmt.Errorf("%w: keys are learned with one agent's receipts", ErrBadKeyOp)
		}
	default:
		return fmt.Errorf("%w: operation %.20q", ErrBadKeyOp, op.Op)
	}
	if op.Agent != "" {
		if err := refs.ValidateAgent(op.Agent); err != nil {
			return fmt.Errorf("%w: %w", ErrBadKeyOp, err)
		}
	}
	if len(op.Keys) == 0 || len(op.Keys) > maxKeyOpKeys {
		return fmt.Errorf("%w: %d keys (want 1 to %d)", ErrBadKeyOp, len(op.Keys), maxKeyOpKeys)
	}
	for _, k := range op.Keys {
		if !isKeyHex(k) {
			return fmt.Errorf("%w: key %.70q is not 64 lowercase hex digits", ErrBadKeyOp, k)
		}
	}
	if len(op.Source) > maxKeySource || !utf8.ValidString(op.Source) {
		return fmt.Errorf("%w: source over %d bytes or not UTF-8", ErrBadKeyOp, maxKeySource)
	}
	return nil
}

func isKeyHex(s string) bool {
	if len(s) != 2*ed25519.PublicKeySize {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// KeyHex is a key's record form.
func KeyHex(k ed25519.PublicKey) string { return hex.EncodeToString(k) }

// KeyRecorder is an optional ability of a Storage that changes trusted keys
// in its own process: a served store's client (clients write no key record
// themselves; the server checks what the caller may do).
type KeyRecorder interface {
	ApplyKeyOp(ctx context.Context, op KeyOp) (int, error)
}

// ApplyKeyOp changes the keys r trusts and returns how many records it
// added or removed. Learning records only keys r does not already trust
// for the agent, and keeps the first source of a key learned twice.
func (r *Repo) ApplyKeyOp(ctx context.Context, op KeyOp) (int, error) {
	if err := op.Check(); err != nil {
		return 0, err
	}
	defer r.reds.forget() // which redactions are honoured depends on the keys
	if kr, ok := r.Storage.(KeyRecorder); ok {
		return kr.ApplyKeyOp(ctx, op)
	}
	now := time.Unix(r.Now(), 0).UTC().Format(time.RFC3339)
	val, err := json.Marshal(keyValue{Time: now, Source: op.Source})
	if err != nil {
		return 0, err
	}
	n := 0
	switch op.Op {
	case KeyOpTrust:
		for _, k := range slices.Compact(slices.Sorted(slices.Values(op.Keys))) {
			name, v := OperatorKeyPrefix+k, []byte(now) // the runtime's form
			if op.Agent != "" {
				name, v = AgentKeyPrefix+op.Agent+"/"+k, val
			}
			if err := r.Storage.SetMeta(ctx, name, v); err != nil {
				return n, err
			}
			n++
		}
	case KeyOpUntrust:
		for _, k := range op.Keys {
			names := []string{OperatorKeyPrefix + k}
			if op.Agent != "" {
				names = []string{AgentKeyPrefix + op.Agent + "/" + k, LearnedKeyPrefix + op.Agent + "/" + k}
			}
			for _, name := range names {
				if _, ok, err := r.Storage.GetMeta(ctx, name); err != nil {
					return n, err
				} else if !ok {
					continue
				}
				if err := r.Storage.DeleteMetaPrefix(ctx, name); err != nil {
					return n, err
				}
				n++
			}
		}
	case KeyOpLearn:
		recs, err := r.Keys(ctx)
		if err != nil {
			return 0, err
		}
		known := map[string]bool{}
		for _, rec := range recs {
			if rec.Agent == "" || rec.Agent == op.Agent {
				known[rec.Key] = true
			}
		}
		for _, k := range op.Keys {
			if known[k] {
				continue
			}
			known[k] = true
			if err := r.Storage.SetMeta(ctx, LearnedKeyPrefix+op.Agent+"/"+k, val); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// Keys lists every trusted and learned key record: the operator keys, then
// each agent's trusted keys, then the learned ones, each in name order. A
// record whose name is not of its kind's form is no key and is left out.
func (r *Repo) Keys(ctx context.Context) ([]KeyRecord, error) {
	var out []KeyRecord
	err := r.Storage.MetaPrefix(ctx, OperatorKeyPrefix, func(name string, v []byte) error {
		k := strings.TrimPrefix(name, OperatorKeyPrefix)
		if !isKeyHex(k) {
			return nil // not a key: it trusts nothing
		}
		rec := KeyRecord{Key: k, Kind: KeyOperator}
		if _, err := time.Parse(time.RFC3339, string(v)); err == nil {
			rec.Time = string(v)
		}
		out = append(out, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, kind := range []struct{ prefix, kind string }{{AgentKeyPrefix, KeyAgent}, {LearnedKeyPrefix, KeyLearned}} {
		err := r.Storage.MetaPrefix(ctx, kind.prefix, func(name string, v []byte) error {
			agent, k, ok := strings.Cut(strings.TrimPrefix(name, kind.prefix), "/")
			if !ok || !isKeyHex(k) || refs.ValidateAgent(agent) != nil {
				return nil // not AGENT/KEY: it trusts nothing
			}
			rec := KeyRecord{Key: k, Kind: kind.kind, Agent: agent}
			var kv keyValue
			if json.Unmarshal(v, &kv) == nil {
				rec.Time, rec.Source = kv.Time, kv.Source
			}
			out = append(out, rec)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TrustedKeys returns the keys r trusts for use with agent, each once: the
// operator keys and agent's trusted keys, and, to verify receipts, the keys
// learned with agent's receipts too.
func (r *Repo) TrustedKeys(ctx context.Context, agent string, use KeyUse) ([]ed25519.PublicKey, error) {
	recs, err := r.Keys(ctx)
	if err != nil {
		return nil, err
	}
	var out []ed25519.PublicKey
	seen := map[string]bool{}
	for _, rec := range recs {
		switch {
		case seen[rec.Key]:
		case rec.Kind == KeyOperator,
			rec.Kind == KeyAgent && rec.Agent == agent,
			rec.Kind == KeyLearned && rec.Agent == agent && use == KeyVerifiesReceipts:
			b, _ := hex.DecodeString(rec.Key) // Keys checked it
			out = append(out, ed25519.PublicKey(b))
			seen[rec.Key] = true
		}
	}
	return out, nil
}
