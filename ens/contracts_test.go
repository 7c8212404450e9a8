package ens

import (
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/ens/enstest"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// The tests deploy the real ENS contracts, compiled artefacts from two npm
// packages that scripts/ens-contracts.sh installs (never committed). Package
// enstest finds and loads them; missing artefacts fail the test with the
// command that installs them.

// artefact is a compiled contract: its ABI and its creation bytecode.
type artefact = enstest.Artefact

func loadContracts(t testing.TB) (registry, resolver artefact) {
	t.Helper()
	return enstest.LoadContracts(t)
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
		{registryABI(), reg.ABI, "resolver", "0x0178b8bf"},
		{registryABI(), reg.ABI, "owner", "0x02571be3"},
		{resolverABI(), res.ABI, "text", "0x59d1d43c"},
		{resolverABI(), res.ABI, "setText", "0x10f13a8c"},
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
