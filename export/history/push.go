package history

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
)

// Pushed is what a push left published.
type Pushed struct {
	*Manifest
	Ref   Ref  // the pointer's value: the manifest's blob, sha256 and size
	Added bool // a pack was added (false: nothing was new; the published manifest)
	// PacksAdded is how many: the last ones of Packs (more than one when
	// the new history did not fit in one pack).
	PacksAdded int
	// Rebuilt: the agent was redacted since the last push, so every pack
	// was written anew without the redacted content; the packs pushed
	// before stay where they were stored (a blob cannot be unpublished).
	Rebuilt bool
}

// Push ships the history of agent's HEAD: one pack of the blocks new since
// the packs of the published manifest (if its signer is key), or several
// when one would exceed MaxPack, with the receipt lines new since (with the
// last pack), then a new manifest naming every pack in order, signed with
// key, then the pointer. With nothing new it returns the published
// manifest and ships nothing.
func (s *Shipper) Push(ctx context.Context, agent string, key ed25519.PrivateKey) (*Pushed, error) {
	h, err := s.Repo.Refs.Head(ctx, agent)
	if err != nil {
		return nil, err
	}
	cm, err := s.Repo.Commit(ctx, h.Commit)
	if err != nil {
		return nil, err
	}
	bh, err := s.Repo.BundleHash(ctx, cm.Tree)
	if err != nil {
		return nil, err
	}
	m := &Manifest{V: Version, Agent: agent, Head: h.Commit, Tree: cm.Tree, BundleHash: bh.String(), Time: s.Repo.Now()}
	var tape [][]byte
	for l, err := range s.Repo.Tape.Lines(ctx, agent) {
		if err != nil {
			return nil, err
		}
		tape = append(tape, l)
	}
	if len(tape) > 0 {
		m.Receipts = &TapeState{Lines: len(tape), SHA256: sha256Hex(ndjson(tape))}
	}
	if s.RecordKeys {
		keys, err := s.Repo.TrustedKeys(ctx, agent, repo.KeyVerifiesReceipts)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			m.Operators = append(m.Operators, repo.KeyHex(k))
		}
		slices.Sort(m.Operators)
	}
	lo, _, err := s.Repo.LogOptions(ctx, agent)
	if err != nil {
		return nil, err
	}
	// Redacted since the last push: a new history, every pack written anew
	// without the content (the packs published before cannot be
	// unpublished; the new manifest no longer names them).
	rebuild, err := s.Repo.HistoryRebuild(ctx, agent)
	if err != nil {
		return nil, err
	}
	prev, prevRef, err := s.Published(ctx, agent, []ed25519.PublicKey{key.Public().(ed25519.PublicKey)})
	switch {
	case errors.Is(err, ErrNoHistory):
	case err != nil:
		return nil, fmt.Errorf("the published history of %s: %w (push starts a new one only when there is none)", agent, err)
	default:
		// Never build on a manifest older than one this store saw: the
		// pointer was rolled back.
		if err := s.checkFresh(ctx, agent, prev, prevRef, 0); err != nil {
			return nil, fmt.Errorf("the published history of %s: %w", agent, err)
		}
		if !rebuild && prev.Head == h.Commit && reflect.DeepEqual(prev.Receipts, m.Receipts) && slices.Equal(prev.Operators, m.Operators) {
			return &Pushed{Manifest: prev, Ref: prevRef}, nil // nothing new
		}
		if !rebuild {
			m.Packs = append(m.Packs, prev.Packs...)
		}
		m.Seq, m.Prev = prev.Seq+1, prevRef.SHA256
	}
	if prev == nil {
		m.Seq = 1
		// A store that saw a history of this agent does not start a new
		// one from 1 when the pointer is gone: it would be refused as older.
		if seen, ok, err := s.Seen(ctx, agent); err != nil {
			return nil, err
		} else if ok {
			m.Seq = seen.Seq + 1
		}
	}
	// Receipt lines new since the published manifest: those after its
	// lines when this tape begins with them, else the whole tape (a reader
	// skips lines it already has).
	newLines := tape
	if prev != nil && !rebuild && prev.Receipts != nil && prev.Receipts.Lines <= len(tape) && sha256Hex(ndjson(tape[:prev.Receipts.Lines])) == prev.Receipts.SHA256 {
		newLines = tape[prev.Receipts.Lines:]
	}
	var heads []objects.CID
	for _, p := range m.Packs {
		heads = append(heads, p.Head)
	}
	base := &packBase{commits: map[objects.CID]bool{}, blocks: dag.Reach{}}
	if err := s.extendBase(ctx, base, heads, lo); err != nil {
		return nil, err
	}
	maxPack := s.MaxPack
	if maxPack <= 0 {
		maxPack = snapshot.DefaultCARMaxStaged
	}
	// The new history goes in one pack, or, when that would be larger than
	// a reader takes, in several (splitPacks).
	plan := []objects.CID{h.Commit}
	var car bytes.Buffer
	pack, st, err := s.writePack(ctx, &car, h.Commit, base, lo)
	if err != nil {
		return nil, err
	}
	if st.Staged() > maxPack {
		car = bytes.Buffer{}
		if plan, err = s.splitPacks(ctx, h.Commit, base, lo, maxPack); err != nil {
			return nil, err
		}
	}
	// A pointer that can check the record update first (ENS: the signer
	// may set the name's record) does so before anything is uploaded.
	if pf, ok := s.Pointer.(snapshot.Preflighter); ok {
		if err := pf.Preflight(ctx, agent); err != nil {
			return nil, fmt.Errorf("%w (nothing was uploaded)", err)
		}
	}
	for i, head := range plan {
		if len(plan) > 1 {
			car.Reset()
			if pack, st, err = s.writePack(ctx, &car, head, base, lo); err != nil {
				return nil, err
			}
			if st.Staged() > maxPack { // splitPacks measured it
				return nil, fmt.Errorf("history: pack %d of %d came to %d bytes to stage, over %d", i+1, len(plan), st.Staged(), maxPack)
			}
		}
		if pack.Blob, pack.SHA256, pack.Size, err = s.putSealed(ctx, car.Bytes()); err != nil {
			return nil, fmt.Errorf("storing the pack: %w", err)
		}
		if i == len(plan)-1 && len(newLines) > 0 {
			rb := &ReceiptBlob{Lines: len(newLines)}
			if rb.Blob, rb.SHA256, rb.Size, err = s.putSealed(ctx, ndjson(newLines)); err != nil {
				return nil, fmt.Errorf("storing the receipts: %w", err)
			}
			pack.Receipts = rb
		}
		m.Packs = append(m.Packs, pack)
		if i < len(plan)-1 {
			if err := s.extendBase(ctx, base, []objects.CID{head}, lo); err != nil {
				return nil, err
			}
		}
	}
	if err := m.Sign(key); err != nil {
		return nil, err
	}
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	mid, msum, err := s.putBlob(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("storing the manifest: %w", err)
	}
	ref := Ref{Blob: mid, SHA256: msum, Size: int64(len(body))}
	if err := s.Pointer.WriteHistory(ctx, agent, ref); err != nil {
		return nil, fmt.Errorf("publishing the manifest: %w", err)
	}
	if err := s.see(ctx, agent, m, ref); err != nil {
		return nil, fmt.Errorf("history: manifest seq %d published; recording it: %w", m.Seq, err)
	}
	if rebuild {
		if err := s.Repo.HistoryRebuilt(ctx, agent); err != nil {
			return nil, fmt.Errorf("history: manifest seq %d published anew; recording it: %w", m.Seq, err)
		}
	}
	return &Pushed{Manifest: m, Ref: ref, Added: true, PacksAdded: len(plan), Rebuilt: rebuild && prev != nil}, nil
}
