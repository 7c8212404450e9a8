package inspect

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"

	"github.com/agentstate/agentstate/internal/textdiff"
	"github.com/agentstate/agentstate/objects"
)

// SubtreeOptions select one page of a subtree's values.
type SubtreeOptions struct {
	Rev    string // the revision; "" is HEAD (ignored with a cursor)
	Prefix string // only keys starting with this
	// Cursor continues where the page that returned it ended, at the same
	// commit; "" starts at the first key.
	Cursor string
	// Budget is the value bytes one page carries: values are added while
	// they fit (the first always comes, in full or by its size alone);
	// each key counts too. At least 1.
	Budget int
	// MaxValue: a value over this many bytes comes by its size alone.
	MaxValue int
}

// SubtreePage is one page of a subtree: its values in key order and, when
// more follow, the cursor to the next page.
type SubtreePage struct {
	Commit objects.CID `json:"commit"`
	Values []Value     `json:"values"`
	Cursor string      `json:"cursor,omitempty"`
}

// subtreeCursor is what a cursor holds: the commit the first page read,
// the prefix, and the last key given.
type subtreeCursor struct {
	Commit objects.CID `json:"c"`
	Prefix string      `json:"p"`
	After  string      `json:"a"`
}

// entryCost is what a key adds to a page besides its value's bytes.
const entryCost = 128

// Subtree returns one page of the keys under o.Prefix with their values.
// A cursor that does not decode, or that was made for another prefix, is
// ErrBadRequest; one naming a commit this store does not hold (another
// store's, or one a collection removed) is ErrNotFound.
func (v *View) Subtree(ctx context.Context, agent string, o SubtreeOptions) (SubtreePage, error) {
	rev, after := o.Rev, ""
	if o.Cursor != "" {
		c, err := decodeSubtreeCursor(o.Cursor)
		if err != nil {
			return SubtreePage{}, err
		}
		if c.Prefix != o.Prefix {
			return SubtreePage{}, badf("the cursor continues prefix %q, not %q", c.Prefix, o.Prefix)
		}
		rev, after = c.Commit.String(), c.After
	}
	id, cm, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return SubtreePage{}, err
	}
	t, err := objects.LoadTree(ctx, v.R.Blocks, cm.Tree)
	if err != nil {
		return SubtreePage{}, classify(err)
	}
	out := SubtreePage{Commit: id, Values: []Value{}}
	budget := max(o.Budget, 1)
	from := o.Prefix
	if after > from {
		from = after
	}
	for en, err := range t.Entries(ctx, from) {
		if err != nil {
			return SubtreePage{}, classify(err)
		}
		if !strings.HasPrefix(en.Key, o.Prefix) {
			break
		}
		if en.Key == after {
			continue
		}
		rd, size, err := objects.OpenValue(ctx, v.R.Blocks, en.Value)
		if err != nil {
			return SubtreePage{}, classify(err)
		}
		inline := size <= uint64(max(o.MaxValue, 0))
		cost := entryCost + len(en.Key)
		if inline {
			cost += int(size)
		}
		if len(out.Values) > 0 && cost > budget {
			out.Cursor = encodeSubtreeCursor(subtreeCursor{Commit: id, Prefix: o.Prefix, After: out.Values[len(out.Values)-1].Key})
			break
		}
		budget -= cost
		val := Value{Key: en.Key, Commit: id, CID: en.Value, Size: size, Truncated: !inline}
		if inline {
			if val.Data, err = objects.ReadContent(rd, size); err != nil {
				return SubtreePage{}, classify(err)
			}
			val.Text = textdiff.IsText(val.Data)
		}
		out.Values = append(out.Values, val)
	}
	return out, nil
}

func encodeSubtreeCursor(c subtreeCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeSubtreeCursor(s string) (subtreeCursor, error) {
	var c subtreeCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(s) > 4<<10 || json.Unmarshal(b, &c) != nil || c.Commit.IsZero() {
		return subtreeCursor{}, badf("invalid cursor (a cursor is passed back unchanged)")
	}
	return c, nil
}

// ReadRange returns length bytes of key's value at rev from offset (fewer
// at its end; Size is the whole value's), reading the chunks before offset
// and none after the range.
func (v *View) ReadRange(ctx context.Context, agent, rev, key string, offset int64, length int) (Value, error) {
	if offset < 0 || length < 0 {
		return Value{}, badf("offset and length must not be negative")
	}
	out, rd, err := v.Open(ctx, agent, rev, key)
	if err != nil {
		return Value{}, err
	}
	if uint64(offset) > out.Size {
		return Value{}, badf("offset %d is past the end of %q (%d bytes)", offset, key, out.Size)
	}
	if _, err := io.CopyN(io.Discard, rd, offset); err != nil {
		return Value{}, classify(err)
	}
	n := min(uint64(length), out.Size-uint64(offset))
	out.Data = make([]byte, n)
	if _, err := io.ReadFull(rd, out.Data); err != nil {
		return Value{}, classify(err)
	}
	out.Text = textdiff.IsText(out.Data)
	return out, nil
}
