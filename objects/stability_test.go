package objects_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// Fixed bytes from docs/format.md §9: decode, re-encode, compare, and check
// the CID each is published under.
var stableVectors = []struct {
	cid, hex string
	commit   bool
}{
	{"bafyreif5wxi37a5p7iiduswsdnqdhgwhfcvmnaxkczjnkggkx5cefxvg24", `a2616581a4616b54736b696c6c732f7265656e7472616e63792e6d646170006174d82a58250001711220
e7b49146f92dfeac58af0de5c74f707ef08feaaeced96ada1d0bf7cd5b4a83c06176d82a582500015512
2045869a98629f86696e539da275a91979cf34eb49c3aaaab156816a9cf97fd1b2616cd82a5825000171
1220743cf136bd8451b1c1775e96f7584d8c90c7e2baf070c9b2d5cdb6e4b5197806`, false},
	{"bafyreiduhtytnpmekgy4c526s33vqtmmsdd6foxqode3fvonw3slkglyay", `a2616582a4616b516d656d6f72792f66616374732e6a736f6e6170006174f66176d82a58250001551220
ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356a4616b581a7061747465
726e732f6163636573732d636f6e74726f6c2e6d646170006174f66176d82a58250001551220e1294b8f
fb9de13862feac1406b7e04cf53f8d0ac900cbd0df0e30c20a446b95616cf6`, false},
	{"bafyreihhwsiun6jn72wfrlyn4xdu64d66ch6vlwo3fvnuhil67gvwsudya", `a2616581a4616b4973797374656d2e6d646170006174f66176d82a5825000155122086f151f617741677
867ec5f248ac01c1e901342e36ee05a802ab8d568e77c150616cf6`, false},
	{"bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm", "a2616580616cf6", false},
	{"bafyreih3nbpdei4qnoldn5xmtcrmycgxrcngwiprmur7r2ztx2kb6gtywi", `a66176016474696d651a6553f1006474726565d82a58250001711220bdb5d1bf83affa103a4ad21b6033
9ac728aac682ea1652d518cabf4442dea6d7676d657373616765647365656467706172656e747380686d
65746164617461a1656167656e74656c756d656e`, true},
}

func TestByteStability(t *testing.T) {
	for _, v := range stableVectors {
		data, err := hex.DecodeString(strings.Join(strings.Fields(v.hex), ""))
		if err != nil {
			t.Fatal(err)
		}
		if got := objects.Sum(objects.CodecDagCBOR, data); got.String() != v.cid {
			t.Fatalf("bytes hash to %s, want %s", got, v.cid)
		}
		if v.commit {
			c, err := objects.DecodeCommit(data)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := c.Encode()
			if !bytes.Equal(again, data) {
				t.Fatal("commit vector does not re-encode to itself")
			}
			if c.Time != 1700000000 || c.Message != "seed" || c.Metadata["agent"] != "lumen" || len(c.Parents) != 0 {
				t.Fatalf("commit vector decoded to %+v", c)
			}
			continue
		}
		if err := objects.DecodeNodeForTest(data); err != nil {
			t.Fatalf("tree vector %s: %v", v.cid, err)
		}
	}
}
