package ens

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// The tests deploy the real ENS contracts, compiled artefacts from two npm
// packages that scripts/ens-contracts.sh installs (never committed).
const (
	registryPkg     = "@ensdomains/ens"
	registryVersion = "0.6.2"
	registryJSON    = "build/contracts/ENSRegistry.json"
	resolverPkg     = "@ensdomains/resolver"
	resolverVersion = "0.3.1"
	resolverJSON    = "build/contracts/PublicResolver.json"
)

// artefact is a compiled contract: its ABI and its creation bytecode.
type artefact struct {
	ABI      abi.ABI
	Bytecode []byte
}

// contractsDir returns the node_modules directory holding the packages:
// $AGENTSTATE_ENS_CONTRACTS, else <repo>/.cache/ens-contracts/node_modules.
func contractsDir(t testing.TB) string {
	if d := os.Getenv("AGENTSTATE_ENS_CONTRACTS"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, ".cache", "ens-contracts", "node_modules")
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", wd)
		}
	}
}

// loadArtefact reads one Truffle artefact, checking the package version.
func loadArtefact(t testing.TB, dir, pkg, version, file string) artefact {
	t.Helper()
	missing := func(err error) {
		t.Helper()
		t.Fatalf("ENS contract artefacts missing (%v).\n"+
			"Run scripts/ens-contracts.sh (or make test) to install %s@%s and %s@%s with npm,\n"+
			"or point AGENTSTATE_ENS_CONTRACTS at a node_modules directory holding them.",
			err, registryPkg, registryVersion, resolverPkg, resolverVersion)
	}
	var pj struct {
		Version string `json:"version"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, pkg, "package.json"))
	if err != nil {
		missing(err)
	}
	if err := json.Unmarshal(raw, &pj); err != nil {
		t.Fatalf("%s/package.json: %v", pkg, err)
	}
	if pj.Version != version {
		t.Fatalf("%s is version %s in %s, the tests need %s: run scripts/ens-contracts.sh", pkg, pj.Version, dir, version)
	}
	raw, err = os.ReadFile(filepath.Join(dir, pkg, file))
	if err != nil {
		missing(err)
	}
	// Truffle artefacts store the creation code as "bytecode"; older ones
	// called it "unlinkedBinary".
	var art struct {
		ABI            json.RawMessage `json:"abi"`
		Bytecode       string          `json:"bytecode"`
		UnlinkedBinary string          `json:"unlinkedBinary"`
	}
	if err := json.Unmarshal(raw, &art); err != nil {
		t.Fatalf("%s/%s: %v", pkg, file, err)
	}
	code := art.Bytecode
	if code == "" {
		code = art.UnlinkedBinary
	}
	if strings.Contains(code, "__") {
		t.Fatalf("%s/%s: bytecode has unlinked library placeholders", pkg, file)
	}
	bin, err := hexutil.Decode(code)
	if err != nil || len(bin) == 0 {
		t.Fatalf("%s/%s: bad bytecode: %v", pkg, file, err)
	}
	a, err := abi.JSON(strings.NewReader(string(art.ABI)))
	if err != nil {
		t.Fatalf("%s/%s: abi: %v", pkg, file, err)
	}
	return artefact{ABI: a, Bytecode: bin}
}

func loadContracts(t testing.TB) (registry, resolver artefact) {
	t.Helper()
	dir := contractsDir(t)
	return loadArtefact(t, dir, registryPkg, registryVersion, registryJSON),
		loadArtefact(t, dir, resolverPkg, resolverVersion, resolverJSON)
}

// TestABIFragments checks the package's hand-written ABI fragments against the
// documented selectors and against the ABIs the real contracts ship.
func TestABIFragments(t *testing.T) {
	reg, res := loadContracts(t)
	for _, tc := range []struct {
		own, real abi.ABI
		method    string
		selector  string
	}{
		{registryABI, reg.ABI, "resolver", "0x0178b8bf"},
		{registryABI, reg.ABI, "owner", "0x02571be3"},
		{resolverABI, res.ABI, "text", "0x59d1d43c"},
		{resolverABI, res.ABI, "setText", "0x10f13a8c"},
	} {
		m, ok := tc.own.Methods[tc.method]
		if !ok {
			t.Fatalf("fragment lacks %s", tc.method)
		}
		if got := hexutil.Encode(m.ID); got != tc.selector {
			t.Errorf("%s selector %s, want %s", m.Sig, got, tc.selector)
		}
		r, ok := tc.real.Methods[tc.method]
		if !ok {
			t.Fatalf("contract ABI lacks %s", tc.method)
		}
		if fmt.Sprint(r.ID) != fmt.Sprint(m.ID) || r.Sig != m.Sig || len(r.Outputs) != len(m.Outputs) {
			t.Errorf("fragment %s differs from the contract's %s", m.Sig, r.Sig)
		}
	}
}
