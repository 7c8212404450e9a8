package snapshot_test

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/walrus"
)

// bindingVector is the test vector of docs/snapshot.md.
func bindingVector() snapshot.Binding {
	return snapshot.Binding{
		Blob:   walrus.BlobIDFromBytes(sha256.Sum256([]byte("blob"))),
		SHA256: sha256.Sum256([]byte("ciphertext")),
		Size:   10,
		Commit: objects.Sum(objects.CodecDagCBOR, []byte("commit")),
		Tree:   objects.Sum(objects.CodecDagCBOR, []byte("tree")),
		Bundle: objects.BundleHash(sha256.Sum256([]byte("bundle"))),
	}
}

const bindingVectorText = "agentstate-binding/1" +
	" blob=-iyMxPKBdrvu1Lc231aaNMec03I-nsQvlnS01GrGuLg" +
	" sha256=305531dcc50ebca31cf1d5b31e9fc76ed51f66b3b6dd5a030c6539ae6532f979" +
	" size=10" +
	" commit=bafyreievaxfmw7drb3ixcjp4y3ftm2pi3xfgzdgyv5vdd5vtzvsgatbqta" +
	" tree=bafyreig4trpnxczni6pgs62lboflq5htfmzfcoczrtu6pn2z5objeeigei" +
	" bundle=0x1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc"

func TestBindingVector(t *testing.T) {
	b := bindingVector()
	if got := b.String(); got != bindingVectorText {
		t.Fatalf("encoding:\n got %s\nwant %s", got, bindingVectorText)
	}
	back, err := snapshot.ParseBinding(bindingVectorText)
	if err != nil || back != b {
		t.Fatalf("parse: %+v %v", back, err)
	}
	file, err := snapshot.ParsePointerFile([]byte(bindingVectorText + "\n"))
	if err != nil || file != b {
		t.Fatalf("pointer file: %+v %v", file, err)
	}
}

func TestParseBindingIsStrict(t *testing.T) {
	v := bindingVectorText
	field := func(name, val string) string {
		parts := strings.Split(v, " ")
		for i, p := range parts {
			if strings.HasPrefix(p, name+"=") {
				parts[i] = name + "=" + val
			}
		}
		return strings.Join(parts, " ")
	}
	bad := map[string]string{
		"empty":             "",
		"version":           strings.Replace(v, "/1", "/2", 1),
		"no version":        strings.TrimPrefix(v, "agentstate-binding/1 "),
		"double space":      strings.Replace(v, " size", "  size", 1),
		"tab":               strings.Replace(v, " size", "\tsize", 1),
		"trailing space":    v + " ",
		"trailing newline":  v + "\n",
		"leading space":     " " + v,
		"extra field":       v + " extra=1",
		"missing field":     strings.Replace(v, " size=10", "", 1),
		"reordered":         strings.Replace(strings.Replace(v, "size=10", "X", 1), "sha256=", "size=10 sha256=", 1),
		"renamed":           strings.Replace(v, "tree=", "root=", 1),
		"blob short":        field("blob", "AAAA"),
		"blob padded":       field("blob", "-iyMxPKBdrvu1Lc231aaNMec03I-nsQvlnS01GrGuLg="),
		"sha256 upper":      field("sha256", strings.ToUpper("305531dcc50ebca31cf1d5b31e9fc76ed51f66b3b6dd5a030c6539ae6532f979")),
		"sha256 short":      field("sha256", "3055"),
		"size leading zero": field("size", "010"),
		"size plus":         field("size", "+10"),
		"size negative":     field("size", "-1"),
		"size hex":          field("size", "0xa"),
		"size huge":         field("size", "99999999999999999999"),
		"commit base58":     field("commit", "zdpuAmJKd3B4R9AwDnBdPNzpJnbCJ9w7Sc7qSfvYtTBoMs5Ld"),
		"commit upper":      field("commit", strings.ToUpper("bafyreievaxfmw7drb3ixcjp4y3ftm2pi3xfgzdgyv5vdd5vtzvsgatbqta")),
		"commit cidv0":      field("commit", "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG"),
		"tree empty":        field("tree", ""),
		"bundle no 0x":      field("bundle", "1e6ed65d77d6364eeaed5a745ba5c4985ae2b700dd85d7cf7f027bdf294a33fc"),
		"bundle upper":      field("bundle", "0x1E6ED65D77D6364EEAED5A745BA5C4985AE2B700DD85D7CF7F027BDF294A33FC"),
		"too long":          v + strings.Repeat("x", snapshot.MaxBindingLen),
	}
	for name, s := range bad {
		if _, err := snapshot.ParseBinding(s); !errors.Is(err, snapshot.ErrBadBinding) {
			t.Errorf("%s: %q: want ErrBadBinding, got %v", name, s, err)
		}
	}
}

func TestParsePointerFile(t *testing.T) {
	id := "-iyMxPKBdrvu1Lc231aaNMec03I-nsQvlnS01GrGuLg"
	for _, old := range []string{id + "\n", id, "  " + id + "\r\n"} {
		_, err := snapshot.ParsePointerFile([]byte(old))
		var ue *snapshot.UnboundError
		if !errors.As(err, &ue) || !errors.Is(err, snapshot.ErrUnbound) || ue.Blob != walrus.BlobID(id) {
			t.Fatalf("old format %q: %v", old, err)
		}
		// The library names the way out; the command line adds its flag.
		if msg := err.Error(); !strings.Contains(msg, "push again") || !strings.Contains(msg, id) || strings.Contains(msg, "--") {
			t.Fatalf("old format message: %s", msg)
		}
	}
	for _, s := range []string{"", "\n", bindingVectorText, bindingVectorText + "\n\n", bindingVectorText + "\r\n", "\n" + bindingVectorText + "\n", "garbage\n"} {
		if _, err := snapshot.ParsePointerFile([]byte(s)); !errors.Is(err, snapshot.ErrBadBinding) {
			t.Errorf("%q: want ErrBadBinding, got %v", s, err)
		}
	}
}

// FuzzParseBinding: no panic; whatever parses re-encodes to exactly the
// input (one printed form per binding), and the pointer-file parser agrees.
func FuzzParseBinding(f *testing.F) {
	f.Add(bindingVectorText)
	f.Add("-iyMxPKBdrvu1Lc231aaNMec03I-nsQvlnS01GrGuLg")
	f.Add(strings.Replace(bindingVectorText, "size=10", "size=010", 1))
	f.Add("agentstate-binding/1 blob= sha256= size= commit= tree= bundle=")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := snapshot.ParseBinding(s)
		if err != nil {
			if !errors.Is(err, snapshot.ErrBadBinding) {
				t.Fatalf("error does not match ErrBadBinding: %v", err)
			}
		} else if b.String() != s {
			t.Fatalf("parsed %q but re-encodes as %q", s, b.String())
		}
		fb, ferr := snapshot.ParsePointerFile([]byte(s + "\n"))
		if err == nil && (ferr != nil || fb != b) {
			t.Fatalf("pointer file of a valid binding: %+v %v", fb, ferr)
		}
		if ferr != nil && !errors.Is(ferr, snapshot.ErrBadBinding) && !errors.Is(ferr, snapshot.ErrUnbound) {
			t.Fatalf("pointer file error: %v", ferr)
		}
		_, _ = snapshot.ParsePointerFile([]byte(s))
	})
}
