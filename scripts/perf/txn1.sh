#!/bin/bash
# Transactions on one node (docs/performance.md, Transactions): one fresh node of
# $SKIFF (extra serve args in ARGS, e.g. "--flush-policy replicated"), then
# `skiff bench produce --transactional-id X --txn-records 1000` (idempotent then
# transactional); one JSON line appended to $OUT, tagged with $TAG, with the load
# average and the node's CPU seconds (needs jq and bc).
#   usage: scripts/perf/txn1.sh ROUND  (env: SKIFF, WORK=/tmp/skiff-txn1, OUT=$WORK/txn1.jsonl,
#   TAG, ARGS, D=5s, PORTBASE=21300: uses PORTBASE..PORTBASE+3)
# A/B: for p in "" "--flush-policy replicated"; do TAG=base ARGS="$p" SKIFF=/tmp/skiff-base scripts/perf/txn1.sh 1;
#        TAG=new ARGS="$p" SKIFF=./skiff scripts/perf/txn1.sh 1; done
set -eu
R=$1
SKIFF=$(realpath "${SKIFF:-./skiff}"); WORK=${WORK:-/tmp/skiff-txn1}; OUT=${OUT:-$WORK/txn1.jsonl}; D=${D:-5s}
TAG=${TAG:-default}; PB=${PORTBASE:-21300}; read -r -a EXTRA <<< "${ARGS:-}"
d=$WORK/$TAG$R; mkdir -p "$d"
nice -n 5 "$SKIFF" serve --data-dir "$d/data" --listen 127.0.0.1:$PB --http 127.0.0.1:$((PB + 1)) \
  --etcd-client 127.0.0.1:$((PB + 2)) --etcd-peer 127.0.0.1:$((PB + 3)) --log-format json "${EXTRA[@]}" >"$d/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait; rm -rf "$d"' EXIT
for _ in $(seq 1 6000); do grep -qs '"skiff is ready"' "$d/log" && break; sleep 0.01; done
grep -qs '"skiff is ready"' "$d/log" || { echo "node not ready" >&2; exit 1; }
cpu() { echo "$(awk '{print $14 + $15}' /proc/$pid/stat) / $(getconf CLK_TCK)" | bc -l; }
c0=$(cpu)
res=$(nice -n 5 "$SKIFF" bench produce -b 127.0.0.1:$PB -t bench --transactional-id X --txn-records 1000 -d $D --json)
c1=$(cpu)
echo "$res" | jq -c --arg tag "$TAG" --arg args "${ARGS:-}" --argjson r "$R" --argjson cpu "$(echo "$c1 - $c0" | bc -l)" \
  --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" '{round: $r, tag: $tag, args: $args, load: $load, server_cpu_s: $cpu, result: .}' >> "$OUT"
