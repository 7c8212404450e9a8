#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned) and the Node.js it needs (22 or later: the system's when it is new
# enough, else Node's own build as npm's node-linux-<arch> package), outside the
# repository, and prints two lines: the node binary, then the suite's entry
# script. Idempotent: quick when both are already there. test-deps.sh runs it;
# runtime/web's conformance test runs it too.
#
#   AGENTSTATE_TEST_CACHE  where to install (default ~/.cache/agentstate-test)
set -euo pipefail

SUITE_VERSION=0.1.16
NODE_VERSION=22.23.3

cache=${AGENTSTATE_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentstate-test}
dir=$cache/mcp-conformance-$SUITE_VERSION
have() { command -v "$1" >/dev/null 2>&1; }
have npm || { echo "mcp-conformance: npm is missing; on Debian: sudo apt-get install npm" >&2; exit 1; }

node=""
if have node && (($(node -p 'process.versions.node.split(".")[0]') >= 22)); then
	node=$(command -v node)
else
	case $(uname -m) in
	x86_64 | amd64) arch=x64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) echo "mcp-conformance: no Node.js build for $(uname -m)" >&2; exit 1 ;;
	esac
	node=$cache/node-$NODE_VERSION/node_modules/node-linux-$arch/bin/node
	if [[ ! -x $node ]]; then
		mkdir -p "$cache/node-$NODE_VERSION"
		npm install --prefix "$cache/node-$NODE_VERSION" --no-save --no-audit --no-fund --loglevel=error \
			"node-linux-$arch@$NODE_VERSION" >&2
	fi
fi

entry=$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
if [[ ! -f $entry ]]; then
	mkdir -p "$dir"
	# The suite declares node >= 22; npm (run by the system's node) only warns.
	npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error \
		"@modelcontextprotocol/conformance@$SUITE_VERSION" >&2
fi
"$node" --version >/dev/null
echo "$node"
echo "$entry"
