#!/bin/bash
# Transaction version 1 against 2 (docs/performance.md, Transactions, issue 16): ROUNDS
# interleaved rounds; in each, for every configuration (one node under flush.policy
# always, a single node's default; one node started with --flush-policy replicated;
# three nodes, RF 3, min.insync.replicas=2) and both --transaction-version 1 and 2
# (the order alternating by round), fresh nodes of $SKIFF, then `skiff bench produce
# --transactional-id X --txn-records 1000` (idempotent, idempotent flushing every 1000 records, then transactional, one
# invocation), and under TV2 `skiff bench consume` read_committed then read_uncommitted.
# One JSON line per run appended to $OUT with the load average, the nodes' CPU seconds
# and wall seconds of the run, and the nodes' skiff_txn_first_writes_total by `how`
# (added = implicit TV2 adds: proof that franz-go ran TV2), and their Go allocations and
# collections (go_mem, since start, read after the produce run). Needs jq, bc, curl.
#   usage: scripts/perf/tv2.sh  (env: SKIFF=./skiff, BENCH=$SKIFF (the client), ROUNDS=3,
#   CONFS="1a 1r 3", WORK=/tmp/skiff-tv2, OUT=$WORK/tv2.jsonl, TAG, D=5s, ARGS (extra serve
#   args), PORTBASE=23000: uses PORTBASE..PORTBASE+39, FIRST=1: the first round's number,
#   PRODUCERS=1: bench producers, each with its own transactional id in the transactional run,
#   LINGER: the bench's --linger in ms (unset: franz-go's 10), BROUNDS: the bench's --rounds,
#   TVS="1 2": transaction versions)
# A/B of two builds, interleaved: for r in 1 2 3; do for t in base new; do
#   TAG=$t SKIFF=/tmp/skiff-$t FIRST=$r ROUNDS=1 OUT=/tmp/tv2.jsonl scripts/perf/tv2.sh; done; done
# Summary: scripts/perf/tv2sum.py $OUT
set -eu
SKIFF=$(realpath "${SKIFF:-./skiff}"); BENCH=$(realpath "${BENCH:-$SKIFF}")
WORK=${WORK:-/tmp/skiff-tv2}; OUT=${OUT:-$WORK/tv2.jsonl}; D=${D:-5s}; ROUNDS=${ROUNDS:-3}
TAG=${TAG:-default}; PB=${PORTBASE:-23000}; read -r -a EXTRA <<< "${ARGS:-}"
CONFS=${CONFS:-1a 1r 3}; PRODUCERS=${PRODUCERS:-1}; TVS=${TVS:-1 2}
LARGS=(); [ -n "${LINGER:-}" ] && LARGS=(--linger "$LINGER"); [ -n "${BROUNDS:-}" ] && LARGS+=(--rounds "$BROUNDS")
pids=()
stop() { kill ${pids[@]} 2>/dev/null || true; wait ${pids[@]} 2>/dev/null || true; pids=(); rm -rf "$WORK/run"; }
trap stop EXIT
start() { # i [args...]: starts node i on ports PB+10i..PB+10i+3
  local i=$1; shift; local d=$WORK/run/n$i; mkdir -p "$d"; local b=$((PB + 10 * i))
  nice -n 5 "$SKIFF" serve --data-dir "$d/data" --listen 127.0.0.1:$b --http 127.0.0.1:$((b + 1)) \
    --etcd-client 127.0.0.1:$((b + 2)) --etcd-peer 127.0.0.1:$((b + 3)) --log-format json "${EXTRA[@]}" "$@" >"$d/log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 6000); do grep -qs '"skiff is ready"' "$d/log" && break; sleep 0.01; done
  grep -qs '"skiff is ready"' "$d/log" || { echo "node $i not ready" >&2; exit 1; }
}
cpu() { local s=0; for p in ${pids[@]}; do s=$((s + $(awk '{print $14 + $15}' /proc/$p/stat))); done; echo "$s / $(getconf CLK_TCK)" | bc -l; }
firstwrites() { # sums skiff_txn_first_writes_total by how over the n nodes: {"added":N,...}
  local n=$1 i; for i in $(seq 0 $((n - 1))); do curl -s http://127.0.0.1:$((PB + 10 * i + 1))/metrics; done |
    awk '/^skiff_txn_first_writes_total\{/ {match($0, /how="[a-z]+"/); h = substr($0, RSTART + 5, RLENGTH - 6); s[h] += $NF}
      END {printf "{"; sep = ""; for (h in s) {printf "%s\"%s\":%d", sep, h, s[h]; sep = ","}; printf "}"}'
}
gomem() { # the n nodes' Go heap allocations (bytes) and collections so far: {"alloc":B,"gcs":N}
  local n=$1 i; for i in $(seq 0 $((n - 1))); do curl -s http://127.0.0.1:$((PB + 10 * i + 1))/metrics; done |
    awk '/^go_memstats_alloc_bytes_total / {a += $2} /^go_gc_duration_seconds_count / {g += $2}
      END {printf "{\"alloc\":%.0f,\"gcs\":%.0f}", a, g}'
}
now() { date +%s.%N; }
run() { # round conf tv
  local r=$1 conf=$2 tv=$3 n=1 args=() bargs=(); B=127.0.0.1:$PB
  case $conf in
  1a) start 0 --transaction-version "$tv" ;;
  1r) start 0 --transaction-version "$tv" --flush-policy replicated ;;
  3) n=3; bargs=(-r 3 --config min.insync.replicas=2)
    start 0 --transaction-version "$tv"; start 1 --transaction-version "$tv" --join 127.0.0.1:$((PB + 2))
    start 2 --transaction-version "$tv" --join 127.0.0.1:$((PB + 2)) ;;
  esac
  local c0 w0 res c1 w1 fw cons="{}"
  c0=$(cpu); w0=$(now)
  res=$(nice -n 5 "$BENCH" bench produce -b $B --http 127.0.0.1:$((PB + 1)) -t bench -k "$PRODUCERS" "${LARGS[@]}" "${bargs[@]}" --transactional-id X --txn-records 1000 -d $D --json)
  c1=$(cpu); w1=$(now); fw=$(firstwrites $n); mem=$(gomem $n)
  if [ "$tv" = 2 ]; then
    local rc ru
    rc=$(nice -n 5 "$BENCH" bench consume -b $B -t bench --isolation read_committed --json)
    ru=$(nice -n 5 "$BENCH" bench consume -b $B -t bench --isolation read_uncommitted --json)
    cons=$(jq -cn --argjson rc "$rc" --argjson ru "$ru" '{read_committed: $rc, read_uncommitted: $ru}')
  fi
  echo "$res" | jq -c --arg tag "$TAG" --arg conf "$conf" --argjson tv "$tv" --argjson r "$r" \
    --argjson cpu "$(echo "$c1 - $c0" | bc -l)" --argjson wall "$(echo "$w1 - $w0" | bc -l)" \
    --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" --argjson fw "$fw" --argjson mem "$mem" --argjson cons "$cons" \
    '{round: $r, tag: $tag, conf: $conf, tv: $tv, load: $load, server_cpu_s: $cpu, wall_s: $wall,
      first_writes: $fw, go_mem: $mem, result: ., consume: $cons}' >> "$OUT"
  stop
}
mkdir -p "$WORK"
FIRST=${FIRST:-1}
for r in $(seq "$FIRST" $((FIRST + ROUNDS - 1))); do
  for conf in $CONFS; do
    if [ $((r % 2)) = 1 ]; then order=$TVS; else order=$(echo $TVS | rev); fi
    for tv in $order; do run "$r" "$conf" "$tv"; done
  done
done
