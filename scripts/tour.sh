#!/usr/bin/env bash
# The agentstate tour, on the embedded defaults (no network): a brain is
# committed, logged, diffed, checked out, forked, snapshotted and restored,
# served, embedded in a runtime, cloned to another store, its whole history
# shipped through the blob store and restored, and pruned.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$(cd "$repo" && realpath "${1:-bin/agentstate}")"
work="$repo/.cache/tour"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export NO_COLOR=1 AGENTSTATE_AGENT=lumen AGENTSTATE_STORE="$work/.agentstate"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ agentstate %s\n' "$*"; "$bin" "$@"; }

say "Create a store and commit the seed brain"
cp -r "$repo/examples/brain" brain
run init
run commit -m "seed brain" brain

say "The agent learns: a new skill, a memory update"
cat > brain/skills/access-control.md <<'MD'
---
name: access-control
description: Check who may call functions that move funds.
---
Look for missing onlyOwner / role checks on withdraw paths.
MD
printf '{"facts": ["withdraw() lacked a caller check in audit #7"]}\n' > brain/memory/facts.json
run commit -m "task-42: learned access-control" --meta task=task-42 brain
echo '{"lastTask": "task-43"}' | run put -m "task-43: kv write" state/session.json

say "History, a diff and a show"
run log --oneline
run diff --stat HEAD~2
run show HEAD~1

say "Blame: the commit and task that last changed each line of the new skill"
run blame skills/access-control.md

say "Time travel: check out the seed into a directory (HEAD does not move)"
run checkout HEAD~2 seed-view
ls -R seed-view | head -20

say "The lineage bundle hash, from the store and from the directory"
run hash HEAD~1   # the commit of brain/ (HEAD also has the kv write)
run hash --dir brain

say "Undo the last operation, then redo it"
run undo
run log --oneline -n 1
run redo

say "Fork the lineage and let the fork diverge"
run fork --from HEAD~1 nova
echo "- nova prefers long findings." | run --agent nova put -m "nova diverges" MEMORY.md
say "Revert: a new commit on nova that undoes its last change (lumen is untouched)"
run --agent nova revert HEAD
run agents
run --agent nova log --oneline

say "Audit: the operation log, and a full verify"
run oplog
run verify

say "Snapshot: a deterministic, encrypted tar shipped to the blob store (here: a local directory standing in for Walrus)"
export AGENTSTATE_BLOB_DIR="$work/walrus-blobs" AGENTSTATE_POINTER_DIR="$work/pointers"
run keygen -o agent.key
run push --key agent.key
run export -o lumen.tar
tar -tvf lumen.tar --numeric-owner | sed -n 1,4p
before_hash="$("$bin" hash)"; "$bin" ls > ls-before.txt

say "Amnesia: wipe the store, restore the agent from the pointer and the blob alone"
rm -rf .agentstate
run restore --key agent.key
after_hash="$("$bin" hash)"; "$bin" ls > ls-after.txt
echo "bundle hash before: $before_hash"
echo "bundle hash after:  $after_hash"
if [[ "$before_hash" == "$after_hash" ]] && cmp -s ls-before.txt ls-after.txt; then
  echo "restored byte for byte: same bundle hash, same keys"
else
  echo "restore mismatch" >&2; exit 1
fi
run snapshots

say "Serve the store: one process holds it, every command goes through it"
"$bin" serve 2>serve.log & server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do "$bin" status 2>/dev/null | grep -q 'served   by' && break; sleep 0.1; done
run status
say "A live writer lands a commit every 0.3 s; log --follow prints them as they land"
( for i in 1 2 3 4 5; do sleep 0.3; echo "{\"step\": $i}" | "$bin" put -m "live step $i" state/live.json >/dev/null; done ) &
writer=$!
printf '$ agentstate log --oneline --follow   (stopped after 2.5 s)\n'
timeout 2.5 "$bin" log --oneline -n 3 --follow || true
wait $writer
say "Time travel, diff, fork and verify against the live store"
run diff -p HEAD~2 HEAD
run checkout HEAD~3 live-view
run fork live-copy
run verify
kill -TERM $server; wait $server 2>/dev/null || true; trap - EXIT
run status

say "The runtime: a Hermes-style task loop embedding agentstate (examples/hermes)"
(cd "$repo" && go run ./examples/hermes -dir "$work/hermes")
run --store "$work/hermes/store" --agent lumen log --oneline -n 8
say "Tasks in history: one entry per landed task, and what one task changed (task:ID names the commit it landed)"
run --store "$work/hermes/store" --agent lumen log --tasks --oneline
run --store "$work/hermes/store" --agent lumen diff --stat task:audit-vault
run --store "$work/hermes/store" --agent lumen receipts --verify
say "What the agent knows: memory.db is a database at every commit, read from the store (no checkout)"
run --store "$work/hermes/store" --agent lumen sql --header memory.db "SELECT id, task, confidence FROM facts"
run --store "$work/hermes/store" --agent lumen sql task:audit-vault:memory.db "SELECT count(*) FROM messages WHERE messages MATCH 'reentrancy'"
say "What task audit-token changed in it, row by row; the history of one fact; who last changed each row"
run --store "$work/hermes/store" --agent lumen diff -p task:audit-token -- memory.db
run --store "$work/hermes/store" --agent lumen log --row facts:1
run --store "$work/hermes/store" --agent lumen blame --table facts memory.db

say "History travels: clone lumen with its whole history into another store, work there, pull it back"
run --store "$work/copy" clone "$work/.agentstate" lumen
run --store "$work/copy" log --oneline -n 4
echo "- learned on the copy." | run --store "$work/copy" put -m "work on the copy" notes/copy.md
run pull --ff-only "$work/copy"
run log --oneline -n 2

say "The whole history through the blob store: push --history (encrypted packs, a manifest signed by the operator key), wipe, restore --history"
run push --key agent.key --history --sign-key operator.key
# (log --json: the commits themselves; the text log also names the other agents at them, which stay behind)
"$bin" log --json > log-before.txt
rm -rf .agentstate
run restore --key agent.key --history --pub operator.key.pub
"$bin" log --json > log-after.txt
if cmp -s log-before.txt log-after.txt; then
  echo "the restored log equals the original, commit for commit ($("$bin" log --oneline | wc -l) commits)"
else
  echo "restored log differs" >&2; diff log-before.txt log-after.txt >&2; exit 1
fi
run verify

say "Bounded growth: a few more tasks, what the bytes hold, then keep the last 3 states and cut the rest"
for i in 1 2 3 4; do
  printf '{"lastTask": "task-%d"}\n' "$((50 + i))" | "$bin" put -m "task-$((50 + i)): kv write" state/session.json >/dev/null
done
run oplog
run du -n 3
run forget --keep-last 3 --dry-run
run forget --keep-last 3
run log --oneline
run verify

say "Look at it: the time-travel page and the MCP server"
"$bin" serve --ui 2>ui.log & server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q 'page at' ui.log && break; sleep 0.1; done
cat ui.log
url=$(grep -o 'http://[^ ]*?token=[^ ]*' ui.log)
if command -v curl >/dev/null 2>&1; then
  printf 'the page answers: HTTP %s\n' "$(curl -s -o /dev/null -w '%{http_code}' -L -c cookies.txt "$url")"
fi
kill -TERM $server; wait $server 2>/dev/null || true; trap - EXIT
cat <<EOT

To look at the brain in a browser (it updates live as tasks land):
  $bin --store $work/.agentstate serve --ui
  then open the "page at http://127.0.0.1:PORT/?token=..." address it prints.

To give an agent the store's MCP tools (log, diff, get, read_subtree, receipts, put, undo, fork, ...),
add to its MCP client configuration:
  {"mcpServers": {"agentstate": {"command": "$bin",
    "args": ["--store", "$work/.agentstate", "--agent", "lumen", "mcp"]}}}
(docs/mcp.md; over HTTP: serve --listen HOST:PORT --token-file F, then /mcp with a bearer token)
EOT
