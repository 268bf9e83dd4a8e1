#!/bin/bash
# Transactions on three nodes (docs/performance.md, Transactions): one round on three
# fresh nodes of $SKIFF: `skiff bench produce` idempotent then transactional (1,000
# records per transaction, RF 3, min.insync.replicas=2), then txnsteps (per-request
# latency of N transactions back to back), with the three nodes' CPU seconds of each.
# One JSON line per command appended to $OUT, tagged with $TAG (needs jq and bc).
#   usage: scripts/perf/txn.sh ROUND   (env: SKIFF=./skiff, TXNSTEPS=txnsteps binary
#   (go build ./scripts/perf/txnsteps), WORK=/tmp/skiff-txn, OUT=$WORK/txn.jsonl, TAG,
#   ARGS (extra serve args), D=5s, N=300, PORTBASE=21200: uses PORTBASE..PORTBASE+39,
#   BENCH=skiff binary that runs the bench (default $SKIFF: give the newer one to get its
#   txn_buffer/txn_flush/txn_end phases against either build's nodes), STEPS=extra txnsteps
#   args, e.g. "-z none -letters" for the bench's bytes: without them txnsteps sends
#   snappy-compressed zeros, about a twentieth of the bench's 1 MB per transaction)
# A/B: for r in 1 2 3; do TAG=base SKIFF=/tmp/skiff-base scripts/perf/txn.sh $r;
#        TAG=new SKIFF=./skiff scripts/perf/txn.sh $r; done
set -eu
R=$1
SKIFF=$(realpath "${SKIFF:-./skiff}"); BENCH=$(realpath "${BENCH:-$SKIFF}"); read -r -a STEPSA <<< "${STEPS:-}"; TXNSTEPS=$(realpath "${TXNSTEPS:-./txnsteps}")
WORK=${WORK:-/tmp/skiff-txn}; OUT=${OUT:-$WORK/txn.jsonl}; D=${D:-5s}; N=${N:-300}
TAG=${TAG:-default}; PB=${PORTBASE:-21200}; read -r -a EXTRA <<< "${ARGS:-}"
pids=()
trap 'kill ${pids[@]} 2>/dev/null; wait; rm -rf "$WORK/$TAG$R"' EXIT
start() { # i [args...]: starts node i on ports PB+10i..PB+10i+3
  local i=$1; shift; local d=$WORK/$TAG$R/n$i; mkdir -p "$d"; local b=$((PB + 10 * i))
  nice -n 5 "$SKIFF" serve --data-dir "$d/data" --listen 127.0.0.1:$b --http 127.0.0.1:$((b + 1)) \
    --etcd-client 127.0.0.1:$((b + 2)) --etcd-peer 127.0.0.1:$((b + 3)) --log-format json "${EXTRA[@]}" "$@" >"$d/log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 6000); do grep -qs '"skiff is ready"' "$d/log" && break; sleep 0.01; done
  grep -qs '"skiff is ready"' "$d/log" || { echo "node $i not ready" >&2; exit 1; }
}
cpu() { local s=0; for p in ${pids[@]}; do s=$((s + $(awk '{print $14 + $15}' /proc/$p/stat))); done; echo "$s / $(getconf CLK_TCK)" | bc -l; }
rec() { jq -c --arg n "$1" --arg tag "$TAG" --argjson r "$R" --argjson cpu "$2" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
  '{round: $r, tag: $tag, name: $n, load: $load, server_cpu_s: $cpu, result: .}' >> "$OUT"; }
mkdir -p "$WORK"
start 0; start 1 --join 127.0.0.1:$((PB + 2)); start 2 --join 127.0.0.1:$((PB + 2))
B=127.0.0.1:$PB
c0=$(cpu)
res=$(nice -n 5 "$BENCH" bench produce -b $B -t bench -r 3 --config min.insync.replicas=2 --transactional-id X \
  --txn-records 1000 -d $D --json)
c1=$(cpu); echo "$res" | rec bench "$(echo "$c1 - $c0" | bc -l)"
res=$(nice -n 5 "$TXNSTEPS" -b $B -t steps -n $N "${STEPSA[@]}")
c2=$(cpu); echo "$res" | rec steps "$(echo "$c2 - $c1" | bc -l)"
