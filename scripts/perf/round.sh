#!/bin/bash
# One round of every measurement in docs/performance.md's table: a fresh node and a
# fresh three-node cluster on loopback, each skiff bench command once, one JSON line
# per command appended to $OUT.
#   usage: scripts/perf/round.sh ROUND   (env: SKIFF=./skiff, WORK=/tmp/skiff-perf, OUT=$WORK/results.jsonl)
# Then: python3 scripts/perf/summarize.py $WORK/results.jsonl. Needs jq and python3.
set -u
R=$1; HERE=$(cd "$(dirname "$0")" && pwd)
export SKIFF=$(realpath "${SKIFF:-./skiff}") WORK=${WORK:-/tmp/skiff-perf}
OUT=${OUT:-$WORK/results.jsonl}; S=$SKIFF
mkdir -p "$WORK"; cd "$WORK"
cpu() { local t=0; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $t; } # clock ticks
rec() { # name, json, extra-json
  python3 -c 'import json,sys; d={"round":int(sys.argv[1]),"name":sys.argv[2],"result":json.loads(sys.argv[3])}; d.update(json.loads(sys.argv[4])); print(json.dumps(d))' "$R" "$1" "$2" "$3" >> $OUT
}
run() { # name pids... -- bench args
  local name=$1; shift; local pids=(); while [ "$1" != "--" ]; do pids+=($1); shift; done; shift
  rm -f $WORK/rss.out $WORK/rss.out.stop
  $HERE/rss.sh ${pids[0]} $WORK/rss.out & local sp=$!
  local c0=$(cpu ${pids[@]})
  local j; j=$($S bench "$@" --json) || { echo "FAILED: $name" >&2; }
  local c1=$(cpu ${pids[@]})
  touch $WORK/rss.out.stop; wait $sp
  local hwm=$(awk '/VmHWM/{print $2}' /proc/${pids[0]}/status)
  rec "$name" "${j:-null}" "{\"server_cpu_s\": $(( (c1-c0) ))e-2, \"rss_max_kb\": $(cat $WORK/rss.out), \"hwm_kb\": $hwm}"
  echo "$name: $(echo "${j:-null}" | jq -c '{mbps: .mb_per_sec, p99: .produce_latency.p99_ms, e2e99: .e2e_latency.p99_ms, tcp: .ratios.loopback_tcp, cpu: .client_cpu_seconds}')" >&2
}

# Single node: ready time, idle RSS.
read pid kafka ec ready < <($HERE/node.sh s$R) || exit 1
sleep 5
rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
rec ready-idle "{\"ready_s\": $ready, \"idle_rss_kb\": $rss, \"loadavg\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}" '{}'
echo "ready $ready s, idle RSS $rss kB" >&2

run single-produce $pid -- produce -b $kafka -t p$R --config flush.policy=replicated --duration 10s --baseline --dir $WORK
run single-produce-always $pid -- produce -b $kafka -t a$R --config flush.policy=always --duration 10s --baseline --dir $WORK
run single-consume $pid -- consume -b $kafka -t p$R --baseline --dir $WORK
run single-rate20 $pid -- produce -b $kafka -t r$R --duration 10s --rate 19532
run single-rate20-linger0 $pid -- produce -b $kafka -t r$R --duration 10s --rate 19532 --linger 0
run single-rate20-linger0-replicated $pid -- produce -b $kafka -t s$R --config flush.policy=replicated --duration 10s --rate 19532 --linger 0
run single-e2e20-linger0 $pid -- e2e -b $kafka -t r$R --duration 10s --rate 19532 --linger 0

# Three nodes, RF 3, right after a single-node run of the same round.
read c1 k1 e1 _ < <($HERE/node.sh c${R}a) || exit 1
read c2 k2 _ _ < <($HERE/node.sh c${R}b --join $e1) || exit 1
read c3 k3 _ _ < <($HERE/node.sh c${R}c --join $e1) || exit 1
sleep 2
run single-produce-2 $pid -- produce -b $kafka -t q$R --config flush.policy=replicated --duration 10s --baseline --dir $WORK
run rf3-produce $c1 $c2 $c3 -- produce -b $k1 -t f$R -r 3 --config min.insync.replicas=2 --duration 10s --baseline --dir $WORK
run rf3-rate20 $c1 $c2 $c3 -- produce -b $k1 -t g$R -r 3 --config min.insync.replicas=2 --duration 10s --rate 19532
run rf3-rate20-linger0 $c1 $c2 $c3 -- produce -b $k1 -t g$R -r 3 --config min.insync.replicas=2 --duration 10s --rate 19532 --linger 0
for p in $pid $c3 $c2 $c1; do kill -TERM $p; done
for p in $pid $c3 $c2 $c1; do while kill -0 $p 2>/dev/null; do sleep 0.1; done; done
rm -rf $WORK/s$R $WORK/c${R}a $WORK/c${R}b $WORK/c${R}c
