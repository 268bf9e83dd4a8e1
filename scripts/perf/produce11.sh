#!/bin/bash
# Same-run A/B of Produce between two builds (e.g. main, where franz-go negotiates
# Produce v7, and a build serving v11): per round, for each build in turn (the order
# alternates between rounds), a fresh node and `skiff bench produce -d $D`, then a
# fresh three-node cluster and `bench produce -r 3`. The bench client is always
# $CLIENT, so only the server differs. One JSON line per run appended to $OUT with the
# servers' CPU seconds (utime+stime of the node processes during the bench), the
# wall time and the load average before the run.
#   usage: scripts/perf/produce11.sh ROUNDS   (env: A=path B=path CLIENT=path WORK=/tmp/produce11-perf OUT=$WORK/ab.jsonl D=5s)
# Then: python3 scripts/perf/produce11.py $OUT
set -u
N=$1; HERE=$(cd "$(dirname "$0")" && pwd)
A=$(realpath "$A"); B=$(realpath "$B"); CLIENT=$(realpath "${CLIENT:-$B}")
export WORK=${WORK:-/tmp/produce11-perf}; OUT=${OUT:-$WORK/ab.jsonl}; D=${D:-5s}
mkdir -p "$WORK"
cpu() { local t=0; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $t; } # clock ticks
pids=()
cleanup() { [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; pids=(); }
trap cleanup EXIT
bench() { # round tag name pids... -- bench args
  local r=$1 tag=$2 name=$3; shift 3; local ps=(); while [ "$1" != "--" ]; do ps+=($1); shift; done; shift
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  local c0 t0 j c1 t1; c0=$(cpu "${ps[@]}"); t0=$(date +%s.%N)
  j=$("$CLIENT" bench produce "$@" -d "$D" --json) || j=null
  t1=$(date +%s.%N); c1=$(cpu "${ps[@]}")
  jq -nc --argjson r "$r" --arg tag "$tag" --arg name "$name" --argjson res "${j:-null}" --argjson cpu "$(( c1 - c0 ))e-2" \
    --argjson wall "$(echo "$t1 - $t0" | bc)" --argjson load "$load" \
    '{round: $r, tag: $tag, name: $name, server_cpu_s: $cpu, wall_s: $wall, load1: $load, result: $res}' >> "$OUT"
  echo "round $r $tag $name: $(echo "$j" | jq -c '{mbps: .mb_per_sec}') cpu $(( c1 - c0 ))e-2 s load $load" >&2
}
one() { # round tag binary
  local r=$1 tag=$2; export SKIFF=$3
  read -r pid kafka _ _ < <("$HERE/node.sh" "$tag$r-one") || return 1
  pids=($pid)
  bench "$r" "$tag" one "$pid" -- -b "$kafka" -t one
  cleanup
  read -r p1 k1 ec _ < <("$HERE/node.sh" "$tag$r-c1") || return 1; pids=($p1)
  read -r p2 _ _ _ < <("$HERE/node.sh" "$tag$r-c2" --join "$ec") || return 1; pids+=($p2)
  read -r p3 _ _ _ < <("$HERE/node.sh" "$tag$r-c3" --join "$ec") || return 1; pids+=($p3)
  for _ in $(seq 1 100); do "$SKIFF" topic create -b "$k1" -r 3 -p 1 ready3 >/dev/null 2>&1 && break; sleep 0.1; done
  bench "$r" "$tag" rf3 "$p1" "$p2" "$p3" -- -b "$k1" -t rf3 -r 3
  cleanup
  rm -rf "$WORK/$tag$r-one" "$WORK/$tag$r-c1" "$WORK/$tag$r-c2" "$WORK/$tag$r-c3"
}
for r in $(seq 1 "$N"); do
  if [ $((r % 2)) -eq 1 ]; then one "$r" base "$A"; one "$r" new "$B"; else one "$r" new "$B"; one "$r" base "$A"; fi
done
