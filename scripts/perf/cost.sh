#!/bin/bash
# Cost per GB (docs/performance.md): one round of the baseline alone (bare
# receivers, sendfile; before the node has filled the page cache), then produce
# and consume on a fresh node, each with --baseline and the node's CPU read from
# its /metrics (--http), one JSON line per command appended to $OUT.
#   usage: scripts/perf/cost.sh ROUND   (env: SKIFF=./skiff, WORK=/tmp/skiff-cost, OUT=$WORK/cost.jsonl, D=5s)
set -eu
R=$1
SKIFF=$(realpath "${SKIFF:-./skiff}"); WORK=${WORK:-/tmp/skiff-cost}; OUT=${OUT:-$WORK/cost.jsonl}; D=${D:-5s}
d=$WORK/node$R; rm -rf "$d"; mkdir -p "$d"
rec() { jq -c --arg n "$1" --argjson r "$R" '{round: $r, name: $n, result: .}' >> "$OUT"; }
sync; "$SKIFF" bench baseline --dir "$d" --bytes 2147483648 --json | rec baseline
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
"$SKIFF" serve --data-dir "$d/data" --listen 127.0.0.1:0 --http 127.0.0.1:0 --etcd-client 127.0.0.1:$(port) \
  --etcd-peer 127.0.0.1:$(port) --log-format json >"$d/log" 2>&1 &
pid=$!
trap 'kill $pid; wait $pid; rm -rf "$d"' EXIT
for _ in $(seq 1 3000); do grep -qs '"skiff is ready"' "$d/log" && break; sleep 0.01; done
kafka=$(grep '"skiff is ready"' "$d/log" | jq -r .kafka); http=$(grep '"skiff is ready"' "$d/log" | jq -r .http)
"$SKIFF" bench produce -b "$kafka" --http "$http" -t p -d "$D" --config flush.policy=replicated --baseline --dir "$d" --json | rec produce
"$SKIFF" bench consume -b "$kafka" --http "$http" -t p --baseline --dir "$d" --json | rec consume
