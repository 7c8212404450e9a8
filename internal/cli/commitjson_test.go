package cli

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/objects"
)

// log --json writes each commit without reflection, byte for byte what
// encoding/json (the generic jsonArrayWriter.add) writes for it: every
// field, nil and empty lists and maps, keys sorted, and strings that need
// escaping (quotes, controls, invalid UTF-8, U+2028, HTML characters left
// as they are, terminal controls escaped after).
func TestCommitJSONAsEncodingJSON(t *testing.T) {
	id := func(s string) objects.CID { return objects.Sum(objects.CodecDagCBOR, []byte(s)) }
	odd := []string{"", "plain", "say \"hi\"", `back\slash`, "tab\there", "line\nbreak\r\n", "<b>&amp;</b>",
		"bell\a\b\f\x00\x1f", "del\x7f", "c1 \u0085", "bidi \u202e evil", "sep \u2028 \u2029", "bad \xff\xfe utf8",
		"ünïcödé ✓ 日本", "emoji 🦀", "\\u0041"}
	commits := []inspect.Commit{
		{CID: id("a"), Parents: []objects.CID{}, Tree: id("t"), Time: 1700000000, Message: "first", Metadata: map[string]string{}},
		{CID: id("b"), Parents: nil, Tree: id("t"), Time: -5, Message: "", Metadata: nil, BundleHash: "0xabc"},
		{CID: id("c"), Parents: []objects.CID{id("a"), id("b")}, Tree: id("t2"), Time: 0, Message: "merge\n\nbody",
			Metadata: map[string]string{"task": "t-1", "attempt": "2", "op": "merge", "model": "m"}, BundleHash: "0x1",
			Cut: []objects.CID{id("b")}},
		{CID: objects.CID{}, Tree: objects.CID{}, Cut: []objects.CID{}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		pick := func() string { return odd[rng.IntN(len(odd))] + odd[rng.IntN(len(odd))] }
		c := inspect.Commit{CID: id(pick()), Parents: []objects.CID{id(pick())}, Tree: id(pick()), Time: rng.Int64() - rng.Int64(),
			Message: pick(), Metadata: map[string]string{}, BundleHash: pick()}
		for range rng.IntN(4) {
			c.Metadata[pick()] = pick()
		}
		if i%7 == 0 {
			c.Cut = []objects.CID{id(pick())}
		}
		commits = append(commits, c)
	}
	var want, got bytes.Buffer
	jw, fw := &jsonArrayWriter{w: &want}, &jsonArrayWriter{w: &got}
	for i, c := range commits {
		wl, gl := want.Len(), got.Len()
		if err := jw.add(c); err != nil {
			t.Fatal(err)
		}
		if err := fw.addCommit(c); err != nil {
			t.Fatal(err)
		}
		if w, g := want.Bytes()[wl:], got.Bytes()[gl:]; !bytes.Equal(w, g) {
			t.Fatalf("commit %d (%+v):\n%s\nwant\n%s", i, c, g, w)
		}
	}
}
