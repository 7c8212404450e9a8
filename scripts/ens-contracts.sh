#!/usr/bin/env bash
# Installs the ENS contract artefacts (ABI + bytecode) that the ens package's
# tests deploy on go-ethereum's simulated chain:
#
#   @ensdomains/ens@0.6.2       build/contracts/ENSRegistry.json
#   @ensdomains/resolver@0.3.1  build/contracts/PublicResolver.json
#
# They go into a git-ignored directory (default <repo>/.cache/ens-contracts,
# override with ENS_CONTRACTS_DIR). The script is idempotent: when both files
# are already there it does nothing. On success it prints the node_modules
# directory, the value the tests read from AGENTSTATE_ENS_CONTRACTS.
#
#   export AGENTSTATE_ENS_CONTRACTS="$(scripts/ens-contracts.sh)"
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${ENS_CONTRACTS_DIR:-$repo/.cache/ens-contracts}"
mods="$dir/node_modules"
registry_json="$mods/@ensdomains/ens/build/contracts/ENSRegistry.json"
resolver_json="$mods/@ensdomains/resolver/build/contracts/PublicResolver.json"

if [[ -s "$registry_json" && -s "$resolver_json" ]]; then
	echo "$mods"
	exit 0
fi

command -v npm >/dev/null 2>&1 || {
	echo "ens-contracts.sh: npm is required (apt-get install npm)" >&2
	exit 1
}

mkdir -p "$dir"
# A private package.json so npm installs here and not in an enclosing project.
if [[ ! -f "$dir/package.json" ]]; then
	printf '{\n  "name": "agentstate-ens-contracts",\n  "private": true\n}\n' >"$dir/package.json"
fi
# --ignore-scripts: only the JSON artefacts are needed, no install hooks run.
npm install --prefix "$dir" --no-save --no-audit --no-fund --ignore-scripts \
	--loglevel=error @ensdomains/ens@0.6.2 @ensdomains/resolver@0.3.1 >&2

for f in "$registry_json" "$resolver_json"; do
	[[ -s "$f" ]] || {
		echo "ens-contracts.sh: npm finished but $f is missing" >&2
		exit 1
	}
done
echo "$mods"
