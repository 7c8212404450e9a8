package main

import (
	"os/exec"
	"strings"
	"testing"
)

// startCosts are packages whose initialisers every command's start paid
// for while no command used them (docs/performance.md, "Unserved log and
// the engine's start, again"): the engine must not link them. The
// multihash registry linked BLAKE2, BLAKE3 (and its CPU feature probe,
// CPUID instructions that trap to the hypervisor on a VM), SHA-3 and
// murmur3, through an IPLD CID library, where a store hashes with sha2-256
// only.
var startCosts = []string{
	"github.com/ipfs/go-cid",
	"github.com/multiformats/go-multihash",
	"github.com/multiformats/go-multihash/register/all",
	"github.com/klauspost/cpuid/v2",
	"lukechampine.com/blake3",
	"golang.org/x/crypto/blake2s",
	"github.com/spaolacci/murmur3",
}

func engineDeps(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", "urfave_cli_no_docs", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	return deps
}

func TestEngineLinksNoUnusedInitialisers(t *testing.T) {
	deps := engineDeps(t)
	if !deps["github.com/dgraph-io/badger/v4"] {
		t.Fatal("go list -deps of the engine does not list Badger: the listing is wrong")
	}
	for _, p := range startCosts {
		if deps[p] {
			t.Errorf("the engine links %s, whose initialisers every command would pay for", p)
		}
	}
}
