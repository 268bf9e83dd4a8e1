#!/bin/bash
# Same-run A/B of transactions (docs/performance.md, Transactions): three rounds of
# txn.sh on three nodes, then two of txn1.sh on one node under each flush policy,
# alternating the builds $BASE and $NEW (the bench client is always $NEW's). JSON lines
# in $OUTDIR/txn.jsonl and txn1.jsonl (needs jq and bc; TXNSTEPS: go build ./scripts/perf/txnsteps).
#   usage: BASE=/tmp/skiff-base NEW=./skiff TXNSTEPS=./txnsteps scripts/perf/txnab.sh
set -eu
cd "$(dirname "$0")"
BASE=$(realpath "$BASE"); NEW=$(realpath "$NEW"); OUTDIR=${OUTDIR:-/tmp/txnab}; mkdir -p "$OUTDIR"
export TXNSTEPS=$(realpath "$TXNSTEPS") STEPS="-z none -letters" BENCH=$NEW
build() { if [ "$1" = base ]; then echo "$BASE"; else echo "$NEW"; fi; }
for r in 1 2 3; do for t in base new; do
  TAG=$t SKIFF=$(build $t) WORK=$OUTDIR/w OUT=$OUTDIR/txn.jsonl PORTBASE=21200 ./txn.sh $r
done; done
for r in 1 2; do for p in "" "--flush-policy replicated"; do for t in base new; do
  TAG=$t ARGS="$p" SKIFF=$(build $t) WORK=$OUTDIR/w1 OUT=$OUTDIR/txn1.jsonl PORTBASE=21300 ./txn1.sh $r
done; done; done
