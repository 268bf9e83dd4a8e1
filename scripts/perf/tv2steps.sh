#!/bin/bash
# Where a transaction's time goes under transaction version 1 and 2 (docs/performance.md,
# Transaction version 2): for ROUNDS rounds, for each configuration (one node started with
# --flush-policy replicated: 1r; a single node's default, always: 1a; three nodes: 3) and
# --transaction-version 1 and 2 (alternating order), fresh nodes of $SKIFF, then txnsteps
# (one franz-go transactional producer, N transactions of 1,000 1 KiB records back to back,
# the bench's bytes) and `txnsteps -idem` (the same bytes, a Flush every 1,000 records: the
# floor of one acknowledged wave); -trace T prints T transactions' request spans to
# $WORK/trace.<conf>.<tv>.<round>. JSON lines in $OUT with the load and the nodes' CPU seconds.
#   usage: scripts/perf/tv2steps.sh (env: SKIFF=./skiff, TXNSTEPS=./txnsteps (go build
#   ./scripts/perf/txnsteps), ROUNDS=2, CONFS="1r 3", N=300, T=3, WORK=/tmp/skiff-tv2steps,
#   OUT=$WORK/steps.jsonl, TAG, PORTBASE=23000: uses PORTBASE..PORTBASE+39)
set -eu
SKIFF=$(realpath "${SKIFF:-./skiff}"); TXNSTEPS=$(realpath "${TXNSTEPS:-./txnsteps}")
WORK=${WORK:-/tmp/skiff-tv2steps}; OUT=${OUT:-$WORK/steps.jsonl}; ROUNDS=${ROUNDS:-2}; N=${N:-300}; T=${T:-3}
TAG=${TAG:-default}; PB=${PORTBASE:-23000}; CONFS=${CONFS:-1r 3}
pids=()
stop() { kill ${pids[@]} 2>/dev/null || true; wait ${pids[@]} 2>/dev/null || true; pids=(); rm -rf "$WORK/run"; }
trap stop EXIT
start() { # i [args...]: starts node i on ports PB+10i..PB+10i+3
  local i=$1; shift; local d=$WORK/run/n$i; mkdir -p "$d"; local b=$((PB + 10 * i))
  nice -n 5 "$SKIFF" serve --data-dir "$d/data" --listen 127.0.0.1:$b --http 127.0.0.1:$((b + 1)) \
    --etcd-client 127.0.0.1:$((b + 2)) --etcd-peer 127.0.0.1:$((b + 3)) --log-format json "$@" >"$d/log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 6000); do grep -qs '"skiff is ready"' "$d/log" && break; sleep 0.01; done
  grep -qs '"skiff is ready"' "$d/log" || { echo "node $i not ready" >&2; exit 1; }
}
cpu() { local s=0; for p in ${pids[@]}; do s=$((s + $(awk '{print $14 + $15}' /proc/$p/stat))); done; echo "$s / $(getconf CLK_TCK)" | bc -l; }
rec() { # name cpu conf tv round
  jq -c --arg n "$1" --arg tag "$TAG" --arg conf "$3" --argjson tv "$4" --argjson r "$5" --argjson cpu "$2" \
    --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
    '{round: $r, tag: $tag, conf: $conf, tv: $tv, name: $n, load: $load, server_cpu_s: $cpu, result: .}' >> "$OUT"
}
mkdir -p "$WORK"
for r in $(seq 1 "$ROUNDS"); do for conf in $CONFS; do
  if [ $((r % 2)) = 1 ]; then order="1 2"; else order="2 1"; fi
  for tv in $order; do
    rf=1
    case $conf in
    1r) start 0 --transaction-version "$tv" --flush-policy replicated ;;
    1a) start 0 --transaction-version "$tv" ;;
    3) rf=3; start 0 --transaction-version "$tv"; start 1 --transaction-version "$tv" --join 127.0.0.1:$((PB + 2))
      start 2 --transaction-version "$tv" --join 127.0.0.1:$((PB + 2)) ;;
    esac
    c0=$(cpu)
    res=$(nice -n 5 "$TXNSTEPS" -b 127.0.0.1:$PB -t steps -rf $rf -n "$N" -z none -letters -trace "$T" 2>"$WORK/trace.$conf.$tv.$r")
    c1=$(cpu); echo "$res" | rec steps "$(echo "$c1 - $c0" | bc -l)" "$conf" "$tv" "$r"
    res=$(nice -n 5 "$TXNSTEPS" -b 127.0.0.1:$PB -t idem -rf $rf -n "$N" -z none -letters -idem)
    c2=$(cpu); echo "$res" | rec idem "$(echo "$c2 - $c1" | bc -l)" "$conf" "$tv" "$r"
    stop
  done
done; done
