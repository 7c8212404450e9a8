package ens

import (
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum/accounts/abi"
)

// The ABI fragments list only the functions this package calls. Selectors:
//
//	registry resolver(bytes32)              0x0178b8bf
//	registry owner(bytes32)                 0x02571be3
//	resolver text(bytes32,string)           0x59d1d43c
//	resolver setText(bytes32,string,string) 0x10f13a8c
const (
	registryABIJSON = `[
 {"type":"function","name":"resolver","stateMutability":"view",
  "inputs":[{"name":"node","type":"bytes32"}],"outputs":[{"name":"","type":"address"}]},
 {"type":"function","name":"owner","stateMutability":"view",
  "inputs":[{"name":"node","type":"bytes32"}],"outputs":[{"name":"","type":"address"}]}
]`
	resolverABIJSON = `[
 {"type":"function","name":"text","stateMutability":"view",
  "inputs":[{"name":"node","type":"bytes32"},{"name":"key","type":"string"}],
  "outputs":[{"name":"","type":"string"}]},
 {"type":"function","name":"setText","stateMutability":"nonpayable",
  "inputs":[{"name":"node","type":"bytes32"},{"name":"key","type":"string"},{"name":"value","type":"string"}],
  "outputs":[]}
]`
)

// The ABIs are parsed on first use, not at start-up: every agentstate
// process links this package, and few of them speak to a chain.
var (
	registryABI = sync.OnceValue(func() abi.ABI { return mustABI(registryABIJSON) })
	resolverABI = sync.OnceValue(func() abi.ABI { return mustABI(resolverABIJSON) })
)

// mustABI parses a constant of this package; a failure is a programming
// error caught by every test run, never a reaction to input.
func mustABI(s string) abi.ABI {
	a, err := abi.JSON(strings.NewReader(s))
	if err != nil {
		panic("ens: bad built-in ABI: " + err.Error())
	}
	return a
}
