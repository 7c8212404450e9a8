#!/usr/bin/env bash
# Installs everything the tests need that is not a Go module, then the ENS
# contract artefacts from npm. `make test` runs it first; it is idempotent and
# quick when everything is already there.
#
# Debian packages the tests use:
#   chromium           the page's test drives a real headless browser
#   libarchive-tools   bsdtar, an independent extractor of our tars
#   sqlite3            an independent reader of memory.db values (the oracle of `sql`)
#   sqlite3-tools      sqldiff, the oracle of SQLite row diffs
#   git, patch, npm    oracles for diffs, and the installer of the ENS contracts
#                      and of the MCP conformance suite (with Node 22)
#
# As root with apt-get (a fresh Debian machine, CI) the missing ones are
# installed; otherwise the script names what is missing and how to get it, and
# fails if a package the tests cannot run without is absent.
set -euo pipefail

# `test-deps.sh mcp-conformance` installs only the MCP conformance suite and
# the Node it needs, and prints the node binary and the suite's script
# (mcp-conformance.sh; runtime/web's TestConformanceSuite runs this).
if [[ ${1:-} == mcp-conformance ]]; then
	exec "$(dirname "${BASH_SOURCE[0]}")/mcp-conformance.sh"
fi

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have chromium || need+=(chromium)
have bsdtar || need+=(libarchive-tools)
have sqlite3 || need+=(sqlite3)
have sqldiff || need+=(sqlite3-tools)
have git || need+=(git)
have patch || need+=(patch)
have npm || need+=(npm)

if ((${#need[@]})); then
	if have apt-get && [[ $(id -u) -eq 0 ]]; then
		echo "test-deps: installing ${need[*]}" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >&2
		apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
	else
		echo "test-deps: missing ${need[*]}; on Debian: sudo apt-get install ${need[*]}" >&2
		exit 1
	fi
fi

"$(dirname "${BASH_SOURCE[0]}")/ens-contracts.sh" >/dev/null
"$(dirname "${BASH_SOURCE[0]}")/mcp-conformance.sh" >/dev/null
