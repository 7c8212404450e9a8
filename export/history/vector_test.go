package history_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/history"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/walrus"
)

// The manifest vector of docs/history.md: every member set, signed with the
// key whose seed is sha256("agentstate history vector"). ed25519 signatures
// are deterministic, so the bytes are fixed; an independent reader must
// accept them and verify the signature against vectorPub.

// vectorManifest is the manifest of docs/history.md, byte for byte: seq 2,
// prev the sha256 of the bytes "manifest 1 bytes" (a stand-in).
const vectorManifest = `{"v":1,"agent":"lumen","head":"bafyreid7m763mvomux66q5trgvghncmnjdgkjmfub2n62zk4mrfnw3psdu","tree":"bafyreigo4i7xtfihakqgzh5k2jyojelyqkw25ld2c5jherieu6sqb2re2m","bundleHash":"0x0a20b156cb1063bf8063d8115a1a08207597c0089962b52743ee79305df83cd0","packs":[{"blob":"vpVWF9rDqJrucFihzKnvk2FxSCc7Z3xpSzu_hzZ-810","sha256":"64eff356b5f94d8b2b22f462016a7ea63afc50d98d9cef047260beccb7ebe124","size":5211,"head":"bafyreie7en33izmfymtfvyqx2yy2zzcwewhbmosowwrfggsxzx7ut5iyiq","blocks":10,"cuts":[{"commit":"bafyreihirfn7ss5ztnpmu6wyhsnkwzbimxpz7ojfhpd5jc6xocbtxkfb3u","parents":["bafyreiebntxhufbu4k4zl3ahqqobpr2ufbjdhjgocpbzuzzxl4ovtd2sgm"]}],"receipts":{"blob":"VqIA5ZW3_Kg2zOa5mrbEEUaU9W0fHu7T3xEjYBiStgo","sha256":"cb3262ea9e069b4e44ae8d38019ec355f3c24f2775fadad84146aa3e1ec7f496","size":1020,"lines":2}},{"blob":"iF0cuLE_2hxWOfKDgVzGEyCv6sTlc2zoDco3YMa8vKU","sha256":"e7e6f7c0ce679281c181cef609fdcc0f8627900b46746885970cc6639742639d","size":687,"head":"bafyreid7m763mvomux66q5trgvghncmnjdgkjmfub2n62zk4mrfnw3psdu","blocks":4}],"receipts":{"lines":2,"sha256":"8e62adffad5b844787e2c25c6e3a1655ed845df420ed66f9efc7cbe2a9807cd0"},"operators":["67302a7178e51624f3505c737dfb2c570b95ddbab5144baecf1a87135f7f192d"],"time":1795418629,"seq":2,"prev":"6d530e1cf84049fc5f08d3281c63064f9bf9d3cd01d706da38b4731c0de35361","operator":"67302a7178e51624f3505c737dfb2c570b95ddbab5144baecf1a87135f7f192d","sig":"546ec67c34ecbe92aa963ef862ba1fd3da591b7cd5aeedf9c266edf453222c82cb7d61e1bcd39c8486ead96c02b71dd3a798a5effbca0524e8f984e9bf99b507"}`

// vectorManifestSeq0 is the same manifest as written before manifests were
// numbered (no seq, no prev): it still reads, as seq 0.
const vectorManifestSeq0 = `{"v":1,"agent":"lumen","head":"bafyreid7m763mvomux66q5trgvghncmnjdgkjmfub2n62zk4mrfnw3psdu","tree":"bafyreigo4i7xtfihakqgzh5k2jyojelyqkw25ld2c5jherieu6sqb2re2m","bundleHash":"0x0a20b156cb1063bf8063d8115a1a08207597c0089962b52743ee79305df83cd0","packs":[{"blob":"vpVWF9rDqJrucFihzKnvk2FxSCc7Z3xpSzu_hzZ-810","sha256":"64eff356b5f94d8b2b22f462016a7ea63afc50d98d9cef047260beccb7ebe124","size":5211,"head":"bafyreie7en33izmfymtfvyqx2yy2zzcwewhbmosowwrfggsxzx7ut5iyiq","blocks":10,"cuts":[{"commit":"bafyreihirfn7ss5ztnpmu6wyhsnkwzbimxpz7ojfhpd5jc6xocbtxkfb3u","parents":["bafyreiebntxhufbu4k4zl3ahqqobpr2ufbjdhjgocpbzuzzxl4ovtd2sgm"]}],"receipts":{"blob":"VqIA5ZW3_Kg2zOa5mrbEEUaU9W0fHu7T3xEjYBiStgo","sha256":"cb3262ea9e069b4e44ae8d38019ec355f3c24f2775fadad84146aa3e1ec7f496","size":1020,"lines":2}},{"blob":"iF0cuLE_2hxWOfKDgVzGEyCv6sTlc2zoDco3YMa8vKU","sha256":"e7e6f7c0ce679281c181cef609fdcc0f8627900b46746885970cc6639742639d","size":687,"head":"bafyreid7m763mvomux66q5trgvghncmnjdgkjmfub2n62zk4mrfnw3psdu","blocks":4}],"receipts":{"lines":2,"sha256":"8e62adffad5b844787e2c25c6e3a1655ed845df420ed66f9efc7cbe2a9807cd0"},"operators":["67302a7178e51624f3505c737dfb2c570b95ddbab5144baecf1a87135f7f192d"],"time":1795418629,"operator":"67302a7178e51624f3505c737dfb2c570b95ddbab5144baecf1a87135f7f192d","sig":"b41cf839db4435dbccb1b023258af084f6b5d47af8f779bb48297796be32bbe6ea6f6da3a4fa597ee4f13aaaffff84e73592c9be4a759f51a35929d28082b70a"}`

func vectorKey() ed25519.PrivateKey {
	s := sha256.Sum256([]byte("agentstate history vector"))
	return ed25519.NewKeyFromSeed(s[:])
}

func blobOf(s string) walrus.BlobID { return walrus.BlobIDFromBytes(sha256.Sum256([]byte(s))) }

func sumOf(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

func vector(t *testing.T) *history.Manifest { return vectorSeq(t, 2, sumOf("manifest 1 bytes")) }

func vectorSeq(t *testing.T, seq uint64, prev string) *history.Manifest {
	cid := func(s string) objects.CID {
		c, err := objects.ParseCID(s)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	head := cid("bafyreid7m763mvomux66q5trgvghncmnjdgkjmfub2n62zk4mrfnw3psdu")
	first := cid("bafyreie7en33izmfymtfvyqx2yy2zzcwewhbmosowwrfggsxzx7ut5iyiq")
	m := &history.Manifest{V: 1, Agent: "lumen", Head: head,
		Tree:       cid("bafyreigo4i7xtfihakqgzh5k2jyojelyqkw25ld2c5jherieu6sqb2re2m"),
		BundleHash: "0x0a20b156cb1063bf8063d8115a1a08207597c0089962b52743ee79305df83cd0",
		Packs: []history.Pack{
			{Blob: blobOf("pack 1"), SHA256: sumOf("pack 1 bytes"), Size: 5211, Head: first, Blocks: 10,
				Cuts:     []repo.CutLink{{Commit: cid("bafyreihirfn7ss5ztnpmu6wyhsnkwzbimxpz7ojfhpd5jc6xocbtxkfb3u"), Parents: []objects.CID{cid("bafyreiebntxhufbu4k4zl3ahqqobpr2ufbjdhjgocpbzuzzxl4ovtd2sgm")}}},
				Receipts: &history.ReceiptBlob{Blob: blobOf("receipts 1"), SHA256: sumOf("receipts 1 bytes"), Size: 1020, Lines: 2}},
			{Blob: blobOf("pack 2"), SHA256: sumOf("pack 2 bytes"), Size: 687, Head: head, Blocks: 4},
		},
		Receipts:  &history.TapeState{Lines: 2, SHA256: sumOf("the tape")},
		Operators: []string{hex.EncodeToString(vectorKey().Public().(ed25519.PublicKey))},
		Time:      1795418629,
		Seq:       seq,
		Prev:      prev,
	}
	if err := m.Sign(vectorKey()); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestManifestVector(t *testing.T) {
	for _, c := range []struct {
		name string
		m    *history.Manifest
		want string
		seq  uint64
	}{{"seq 2", vector(t), vectorManifest, 2}, {"before seq", vectorSeq(t, 0, ""), vectorManifestSeq0, 0}} {
		body, err := json.Marshal(c.m)
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != c.want {
			t.Fatalf("%s: the manifest encodes as\n%s\nnot as the documented vector\n%s", c.name, body, c.want)
		}
		// The signing rule as docs/history.md states it, applied by hand:
		// the context line, then the manifest without its "sig" member.
		i := strings.Index(c.want, `,"sig":"`)
		unsigned := c.want[:i] + "}"
		sig, _ := hex.DecodeString(c.want[i+8 : len(c.want)-2])
		if !ed25519.Verify(vectorKey().Public().(ed25519.PublicKey), []byte("agentstate-history-v1\n"+unsigned), sig) {
			t.Fatalf("%s: the documented signature does not verify by the documented rule", c.name)
		}
		m, err := history.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Verify([]ed25519.PublicKey{vectorKey().Public().(ed25519.PublicKey)}); err != nil {
			t.Fatal(err)
		}
		if m.Seq != c.seq {
			t.Fatalf("%s: seq %d", c.name, m.Seq)
		}
	}
	// prev without a seq, or not 64 hex digits, is malformed.
	for _, bad := range []string{
		strings.Replace(vectorManifest, `"seq":2,`, ``, 1),
		strings.Replace(vectorManifest, `"prev":"6d53`, `"prev":"6D53`, 1),
	} {
		if _, err := history.Parse([]byte(bad)); !errors.Is(err, history.ErrBadManifest) {
			t.Fatalf("a malformed seq/prev parsed: %v", err)
		}
	}
}

// FuzzParse: no input panics Parse or ParseRef, and whatever Parse accepts
// re-encodes to the same bytes.
func FuzzParse(f *testing.F) {
	f.Add([]byte(vectorManifest))
	f.Add([]byte(vectorManifestSeq0))
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA " + strings.Repeat("0", 64) + " 12"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := history.Parse(data); err == nil {
			again, err := json.Marshal(m)
			if err != nil || strings.TrimSuffix(string(data), "\n") != string(again) {
				t.Fatalf("accepted a manifest that does not re-encode to itself")
			}
		}
		if r, err := history.ParseRef(string(data)); err == nil {
			if back, err := history.ParseRef(r.String()); err != nil || back != r {
				t.Fatalf("ref %q does not round-trip: %v", r, err)
			}
		}
	})
}
