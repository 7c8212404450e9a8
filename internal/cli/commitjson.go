package cli

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/objects"
)

// appendCommitJSON appends c as encoding/json writes it as an element of a
// top-level array with two-space indent and no HTML escaping (env.writeJSON's
// form), without reflection: a log --json of many commits spent as long
// encoding each by reflection as reading it. TestCommitJSONAsEncodingJSON
// holds the two to the same bytes.
func appendCommitJSON(b []byte, c inspect.Commit) []byte {
	const in1, in2 = "\n    ", "\n      "
	b = append(b, '{')
	b = append(b, in1+`"cid": `...)
	b = appendCIDJSON(b, c.CID)
	b = append(b, ","+in1+`"parents": `...)
	b = appendCIDsJSON(b, c.Parents, in2, "\n    ")
	b = append(b, ","+in1+`"tree": `...)
	b = appendCIDJSON(b, c.Tree)
	b = append(b, ","+in1+`"time": `...)
	b = strconv.AppendInt(b, c.Time, 10)
	b = append(b, ","+in1+`"message": `...)
	b = appendStringJSON(b, c.Message)
	b = append(b, ","+in1+`"metadata": `...)
	switch {
	case c.Metadata == nil:
		b = append(b, "null"...)
	case len(c.Metadata) == 0:
		b = append(b, "{}"...)
	default:
		keys := make([]string, 0, len(c.Metadata))
		for k := range c.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, in2...)
			b = appendStringJSON(b, k)
			b = append(b, ": "...)
			b = appendStringJSON(b, c.Metadata[k])
		}
		b = append(b, "\n    }"...)
	}
	b = append(b, ","+in1+`"bundleHash": `...)
	b = appendStringJSON(b, c.BundleHash)
	if len(c.Cut) > 0 {
		b = append(b, ","+in1+`"cut": `...)
		b = appendCIDsJSON(b, c.Cut, in2, "\n    ")
	}
	return append(b, "\n  }"...)
}

// appendCIDsJSON appends a list of CIDs (null for nil) at an indent.
func appendCIDsJSON(b []byte, ids []objects.CID, in, end string) []byte {
	switch {
	case ids == nil:
		return append(b, "null"...)
	case len(ids) == 0:
		return append(b, "[]"...)
	}
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, in...)
		b = appendCIDJSON(b, id)
	}
	return append(append(b, end...), ']')
}

// appendCIDJSON appends a CID as its MarshalText gives it, quoted.
func appendCIDJSON(b []byte, id objects.CID) []byte { return appendStringJSON(b, id.String()) }

// appendStringJSON appends s quoted as encoding/json quotes it with HTML
// escaping off: printable ASCII other than '"' and '\' as it is, anything
// else by encoding/json itself.
func appendStringJSON(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if enc.Encode(s) != nil {
				return append(b, `""`...)
			}
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
