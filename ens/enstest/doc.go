// Package enstest runs the real ENS contracts on go-ethereum's in-process
// simulated chain for tests, reachable like a development node over HTTP
// JSON-RPC on the loopback interface.
//
// The nouns:
//
//   - An Artefact is a compiled contract (ABI and creation bytecode) read from
//     the npm packages `@ensdomains/ens@0.6.2` (ENSRegistry) and
//     `@ensdomains/resolver@0.3.1` (PublicResolver), which
//     scripts/ens-contracts.sh installs into <repo>/.cache/ens-contracts
//     (override with AGENTSTATE_ENS_CONTRACTS). They are never committed; when
//     they are missing the calling test fails with the command to run, it
//     does not skip.
//   - A Chain is a simulated chain (chain id 1337) with one ENSRegistry and
//     one PublicResolver deployed by its Deployer, who owns the root node.
//     Its URL is an HTTP JSON-RPC endpoint on 127.0.0.1 serving the eth, net,
//     web3 and txpool namespaces, so code that dials a URL (ens.Dial, the CLI's
//     --eth-rpc) talks to it as to any node.
//   - Sealing: the simulated chain only makes a block when asked. A Chain
//     seals on demand, like a development node with instant sealing: a
//     background loop seals a block whenever the transaction pool holds a
//     pending transaction, so a client that sends a transaction and waits for
//     its receipt sees it mined within tens of milliseconds.
//   - Register gives a name (already normalised, ASCII) to an owner with the
//     PublicResolver as its resolver, creating the parent names on the way.
//     Reads (Owner, ResolverOf, Text) go through the contracts' own ABIs,
//     independently of package ens, so a test can check what ens wrote.
//
// Everything stays on the loopback interface and ends with the test.
package enstest
