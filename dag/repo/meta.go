package repo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// Meta records a served store's clients may write. A client of a served
// store (dag/repo/remote) writes metadata records only through calls that
// check them: the raw SetMeta call takes only the records below, each
// checked by CheckClientMeta, and DeleteMetaPrefix none; every other record
// changes only through its own call (tags: SetTag and DeleteTag, which keep
// SetTag's rule in the server; checkpoints: Forget and AdoptCuts;
// trusted and learned keys: TrustKeys, which only the operator may make,
// and LearnKeys) or never (the store's format). A record kind a client
// must write through the raw calls needs a rule here.
//
//	snapshots/AGENT/... a JSON object of at most 64 KiB (snapshot push and restore records)
//	bundle/TREE         the tree's bundle hash, recomputed here (BundleHash's cache)
//	kdf-salt            16 to 64 bytes, written once (the passphrase cipher's salt)
//	history/AGENT       the newest history manifest seen (HistorySeen), its seq never lowered
var ErrMetaRefused = errors.New("repo: a metadata record clients may not write")

const (
	tagPrefix      = "tag/"
	snapshotPrefix = "snapshots/"
	bundlePrefix   = "bundle/"
	kdfSaltName    = "kdf-salt"
	maxSnapshotRec = 64 << 10
	// HistorySeenPrefix prefixes the record of the newest history manifest
	// of each agent a store pushed or restored ("history/" + agent: JSON of
	// HistorySeen; export/history).
	HistorySeenPrefix = "history/"
)

// HistorySeen is the newest history manifest of an agent a store has
// pushed or restored (export/history refuses an older one).
type HistorySeen struct {
	Seq    uint64 `json:"seq"`
	SHA256 string `json:"sha256"` // of the manifest's bytes
	Blob   string `json:"blob"`
	Time   int64  `json:"time"` // the manifest's
}

func metaRefused(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrMetaRefused, fmt.Sprintf(format, a...))
}

// CheckClientMeta checks a record a served store's client asks to write.
func (r *Repo) CheckClientMeta(ctx context.Context, name string, v []byte) error {
	switch {
	case strings.HasPrefix(name, tagPrefix):
		// SetTag's rule (an existing tag moves only on request) holds only
		// where the check and the write are one step: the SetTag call.
		return metaRefused("%.80q: tags change only through the SetTag and DeleteTag calls", name)
	case strings.HasPrefix(name, snapshotPrefix):
		agent, rest, ok := strings.Cut(strings.TrimPrefix(name, snapshotPrefix), "/")
		if !ok || rest == "" || refs.ValidateAgent(agent) != nil {
			return metaRefused("%.80q is not snapshots/AGENT/...", name)
		}
		var obj map[string]json.RawMessage
		if len(v) > maxSnapshotRec || json.Unmarshal(v, &obj) != nil {
			return metaRefused("snapshot record %.80q: not a JSON object of at most %d bytes", name, maxSnapshotRec)
		}
		return nil
	case strings.HasPrefix(name, bundlePrefix):
		tree, err := objects.CIDFromBytes([]byte(strings.TrimPrefix(name, bundlePrefix)))
		if err != nil {
			return metaRefused("%.80q does not name a tree", name)
		}
		ls, err := r.leaves(ctx, tree)
		if err != nil {
			return metaRefused("bundle hash of %s: %v", tree, err)
		}
		if h := ls.hash(); !bytes.Equal(v, h[:]) {
			return metaRefused("bundle hash of %s: not the tree's", tree)
		}
		return nil
	case strings.HasPrefix(name, HistorySeenPrefix):
		agent := strings.TrimPrefix(name, HistorySeenPrefix)
		if refs.ValidateAgent(agent) != nil {
			return metaRefused("%.80q is not history/AGENT", name)
		}
		var seen HistorySeen
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if len(v) > 1024 || dec.Decode(&seen) != nil || !isKeyHex(seen.SHA256) || seen.Blob == "" || len(seen.Blob) > 64 {
			return metaRefused("history record of %s: not {\"seq\",\"sha256\",\"blob\",\"time\"}", agent)
		}
		old, ok, err := r.Storage.GetMeta(ctx, name)
		if err != nil {
			return err
		}
		var was HistorySeen
		if ok && json.Unmarshal(old, &was) == nil && seen.Seq < was.Seq {
			return metaRefused("history record of %s: seq %d is below the seq %d seen", agent, seen.Seq, was.Seq)
		}
		return nil
	case name == kdfSaltName:
		if len(v) < 16 || len(v) > 64 {
			return metaRefused("kdf-salt of %d bytes, want 16 to 64", len(v))
		}
		old, ok, err := r.Storage.GetMeta(ctx, name)
		if err != nil {
			return err
		}
		if ok && !bytes.Equal(old, v) {
			return metaRefused("kdf-salt is set already: replacing it would make every passphrase snapshot unreadable")
		}
		return nil
	}
	return metaRefused("%.80q changes only through the call that checks it, or never", name)
}

// CheckClientMetaDelete checks a deletion a served store's client asks
// for: none is taken (a tag is deleted by the DeleteTag call, which removes
// a damaged record too).
func CheckClientMetaDelete(name string, exact bool) error {
	return metaRefused("deleting %.80q: clients delete tags through DeleteTag, and no other record", name)
}

// MetaDeleter is an optional ability of a Storage: deleting one metadata
// record by its whole name (DeleteMetaPrefix would take every record the
// name is a prefix of).
type MetaDeleter interface {
	DeleteMeta(ctx context.Context, name string) error
}

// deleteMeta deletes the record named name and no other.
func (r *Repo) deleteMeta(ctx context.Context, name string) error {
	if d, ok := r.Storage.(MetaDeleter); ok {
		return d.DeleteMeta(ctx, name)
	}
	// Without the ability: delete by prefix, then write back the records
	// that only began with the name.
	var keep [][2][]byte
	err := r.Storage.MetaPrefix(ctx, name, func(n string, v []byte) error {
		if n != name {
			keep = append(keep, [2][]byte{[]byte(n), v})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.Storage.DeleteMetaPrefix(ctx, name); err != nil {
		return err
	}
	for _, kv := range keep {
		if err := r.Storage.SetMeta(ctx, string(kv[0]), kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// BadTag is a record under tag/ that names no tag: its name is not
// tag/AGENT/NAME with a valid agent and name, or its value is not a CID.
// Tags leaves it out, verify reports it, DeleteTag removes it.
type BadTag struct {
	Record  string `json:"record"`
	Agent   string `json:"agent"`
	Name    string `json:"name"`
	Problem string `json:"problem"`
}

// parseTag reads one record under tag/.
func parseTag(name string, v []byte) (agent string, t Tag, bad *BadTag) {
	rest := strings.TrimPrefix(name, tagPrefix)
	agent, n, ok := strings.Cut(rest, "/")
	b := &BadTag{Record: name, Agent: agent, Name: n}
	switch {
	case !ok:
		b.Problem = "no tag name"
	case refs.ValidateAgent(agent) != nil:
		b.Problem = "not a valid agent name"
	case refs.ValidateAgent(n) != nil:
		b.Problem = "not a valid tag name"
	default:
		c, err := objects.ParseCID(string(v))
		if err != nil {
			b.Problem = fmt.Sprintf("value %.40q is not a CID", v)
			break
		}
		return agent, Tag{Name: n, Commit: c}, nil
	}
	return agent, Tag{}, b
}

// BadTags lists the records under tag/ (of agent, or every agent's for "")
// that name no tag.
func (r *Repo) BadTags(ctx context.Context, agent string) ([]BadTag, error) {
	prefix := tagPrefix
	if agent != "" {
		prefix += agent + "/"
	}
	var out []BadTag
	err := r.Storage.MetaPrefix(ctx, prefix, func(name string, v []byte) error {
		if _, _, bad := parseTag(name, v); bad != nil && (agent == "" || bad.Agent == agent) {
			out = append(out, *bad)
		}
		return nil
	})
	return out, err
}
