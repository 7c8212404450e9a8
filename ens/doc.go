// Package ens reads and writes agentstate's snapshot pointer: the ENS text
// record that names the Walrus blob holding an agent's current snapshot.
//
// Nouns:
//
//   - Name: a human-readable ENS name such as "lumen.eth". Every name is
//     normalised with ENSIP-15 ([Normalize]) before it is hashed; callers may
//     pass names in any case ("Lumen.ETH" and "lumen.eth" are the same name).
//   - Node: the 32-byte EIP-137 namehash of a normalised name ([Namehash]).
//     Contracts know names only by their node.
//   - Registry: the ENS registry contract. It maps a node to its owner and to
//     its resolver. [DefaultRegistry] is the address used on Mainnet and Sepolia.
//   - Resolver: the contract that holds a node's records. The pointer lives in
//     its text records (ENSIP-5): text(node, key) / setText(node, key, value).
//   - Pointer: the text record [PointerKey] ("agent-snapshot") whose value is
//     the Walrus blob id of the agent's current snapshot. A missing record reads
//     as "" on chain and as [ErrNoRecord] here.
//   - Signer: the secp256k1 key that signs setText transactions. The resolver
//     decides whom it authorises; for the ENS PublicResolver that is the node's
//     owner in the registry, or an address the owner authorised.
//   - Backend: the subset of an Ethereum JSON-RPC client the [Client] uses
//     ([Backend]); *ethclient.Client and go-ethereum's simulated chain both
//     satisfy it.
//
// All contract calls are ABI-encoded with go-ethereum's accounts/abi from small
// ABI fragments that list only the functions this package calls.
package ens
