#!/bin/bash
# Cheap replication (docs/performance.md): one round of RF 3 on three fresh nodes
# started with the serve args in $ARGS (e.g. "--replica-fetch-min-bytes 65536
# --replica-fetch-wait-max 2ms"), beside one fresh node: produce throughput with the
# nodes' CPU per GB, and acks=all latency at 20 MB/s with linger 0. One JSON line
# per command appended to $OUT, tagged with $TAG, with the three nodes' Produce and Fetch
# requests of each RF 3 run and the leaders' acknowledgement waits (skiff_produce_ack_wait_seconds)
# of the 20 MB/s run. RATE_ONLY=1 runs only the 20 MB/s one. BASELINE=path to a skiff
# with the bare_replication row first runs `bench baseline` (BASELINE_BYTES, default
# 512 MiB, in $WORK) before any node starts: the floor ratio of RF 3 on this machine;
# BASELINE_WARM=BYTES passes --warm-up BYTES to it (4x BASELINE_BYTES is what the
# measurements before the default of at most 256 MiB used).
# WARM=MiB writes and removes a file of that many MiB in $WORK right before each
# full-rate run, so that the one node and the cluster both write into just-freed page
# cache (on a VM with free page reporting, writing into pages the host took back costs
# several times more, and the one node, run first, would otherwise reuse the pages the
# previous round freed). FULL_ONLY=1 skips the 20 MB/s run. The 20 MB/s run also records the three nodes' context
# switches and read and write calls during it; LINGER=MS runs it with that linger instead of 0
# (batches then follow the clock, not how fast acknowledgements come back, so two builds get
# about the same requests).
#   usage: scripts/perf/repl.sh ROUND   (env: SKIFF=./skiff, WORK=/tmp/skiff-repl, OUT=$WORK/repl.jsonl, TAG, ARGS, D=5s, RATE_ONLY, FULL_ONLY, BASELINE, BASELINE_BYTES, BASELINE_WARM, WARM, LINGER)
set -eu
R=$1
SKIFF=$(realpath "${SKIFF:-./skiff}"); WORK=${WORK:-/tmp/skiff-repl}; OUT=${OUT:-$WORK/repl.jsonl}; D=${D:-5s}
TAG=${TAG:-default}; read -r -a EXTRA <<< "${ARGS:-}"
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
pids=()
trap 'kill ${pids[@]} 2>/dev/null; wait; rm -rf "$WORK/$TAG$R"' EXIT
start() { # name [args...]: starts a node; sets KAFKA, HTTP, EC
  local d=$WORK/$TAG$R/$1; shift; mkdir -p "$d"; EC=127.0.0.1:$(port); local ep=127.0.0.1:$(port)
  "$SKIFF" serve --data-dir "$d/data" --listen 127.0.0.1:0 --http 127.0.0.1:0 --etcd-client $EC --etcd-peer $ep \
    --log-format json "${EXTRA[@]}" "$@" >"$d/log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 6000); do grep -qs '"skiff is ready"' "$d/log" && break; sleep 0.01; done
  KAFKA=$(grep '"skiff is ready"' "$d/log" | jq -r .kafka); HTTP=$(grep '"skiff is ready"' "$d/log" | jq -r .http)
}
rec() { jq -c --arg n "$1" --arg tag "$TAG" --argjson r "$R" '{round: $r, tag: $tag, name: $n, result: .}' >> "$OUT"; }
mkdir -p "$WORK"
warm() { if [ -n "${WARM:-}" ]; then dd if=/dev/zero of="$WORK/.warm-$TAG$R" bs=1M count="$WARM" status=none; rm -f "$WORK/.warm-$TAG$R"; fi; }
if [ -n "${BASELINE:-}" ]; then
  "$BASELINE" bench baseline --dir "$WORK" --bytes "${BASELINE_BYTES:-536870912}" ${BASELINE_WARM:+--warm-up "$BASELINE_WARM"} --json | rec baseline
fi
if [ -z "${RATE_ONLY:-}" ]; then
  start one; K1=$KAFKA; H1=$HTTP
  warm
  "$SKIFF" bench produce -b $K1 --http $H1 -t one -d $D --config flush.policy=replicated --json | rec one
fi
start c1; C1=$KAFKA; HC1=$HTTP; J=$EC
start c2 --join $J; HC2=$HTTP
start c3 --join $J; HC3=$HTTP
H="--http $HC1 --http $HC2 --http $HC3"
# A node is ready before the first one's metadata lists it: wait until a topic of RF 3 can be made.
for _ in $(seq 1 100); do "$SKIFF" topic create -b $C1 -r 3 -p 1 ready3 >/dev/null 2>&1 && break; sleep 0.1; done
# The three nodes' Produce and Fetch requests so far, as {"Produce": N, "Fetch": M}.
requests() { for h in $HC1 $HC2 $HC3; do curl -s "http://$h/metrics"; done |
  awk -F'[" ]' '/^skiff_requests_total\{api="(Produce|Fetch)"\}/ { c[$2] += $NF }
       END { printf "{\"Produce\":%d,\"Fetch\":%d}\n", c["Produce"], c["Fetch"] }'; }
if [ -z "${RATE_ONLY:-}" ]; then
  warm; Q0=$(requests)
  "$SKIFF" bench produce -b $C1 $H -t rf3 -r 3 --config min.insync.replicas=2 -d $D --json | rec rf3
  jq -n --argjson b "$Q0" --argjson a "$(requests)" '{Produce: ($a.Produce - $b.Produce), Fetch: ($a.Fetch - $b.Fetch)}' | rec rf3_requests
fi
# The three nodes' skiff_produce_ack_wait_seconds buckets summed ({} on a build without it):
# the 20 MB/s run's acknowledgement waits on the leaders, from append to acknowledged.
ackwait() { for h in $HC1 $HC2 $HC3; do curl -s "http://$h/metrics"; done |
  awk '/^skiff_produce_ack_wait_seconds_bucket/ { match($0, /le="[^"]*"/); c[substr($0, RSTART+4, RLENGTH-5)] += $NF }
       END { printf "{"; n = 0; for (k in c) printf "%s\"%s\":%d", (n++ ? "," : ""), k, c[k]; print "}" }'; }
[ -n "${FULL_ONLY:-}" ] && exit 0
# The three nodes' context switches (voluntary, involuntary, over all their threads) and
# read and write calls (/proc/PID/io syscr, syscw), as {"vcs": N, "ics": N, "reads": N, "writes": N}.
NODES="${pids[@]: -3}"
kernel() { for p in $NODES; do
    cat /proc/$p/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/ { v += $2 } /^nonvoluntary_ctxt/ { n += $2 } END { print v + 0, n + 0 }'
    awk '/^syscr/ { r = $2 } /^syscw/ { w = $2 } END { print r + 0, w + 0 }' /proc/$p/io
  done | paste - - | awk '{ v += $1; n += $2; r += $3; w += $4 }
       END { printf "{\"vcs\":%d,\"ics\":%d,\"reads\":%d,\"writes\":%d}\n", v, n, r, w }'; }
W0=$(ackwait); Q0=$(requests); K0=$(kernel)
"$SKIFF" bench produce -b $C1 $H -t rate -r 3 --config min.insync.replicas=2 -d 10s --rate 19532 --linger ${LINGER:-0} --json | rec rf3_20mbs
jq -n --argjson b "$K0" --argjson a "$(kernel)" '$a | with_entries(.value -= $b[.key])' | rec rf3_20mbs_kernel
jq -n --argjson b "$W0" --argjson a "$(ackwait)" '[$a | to_entries[] | {le: .key, n: (.value - ($b[.key] // 0))}]' | rec ack_wait
jq -n --argjson b "$Q0" --argjson a "$(requests)" '{Produce: ($a.Produce - $b.Produce), Fetch: ($a.Fetch - $b.Fetch)}' | rec rf3_20mbs_requests
