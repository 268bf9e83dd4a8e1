#!/bin/sh
# freeze10.sh: issue 21's measurement. Runs TestFaultFreezeFranz and
# TestFaultFreezeLibrdkafka (3 nodes, RF 3, minISR 2, each node frozen 10 s with
# SIGSTOP, 2,000 records/s, acks=all idempotent) ROUNDS times each, interleaved, and
# prints one line per run: client, result, longest ack gap, failed records, lost
# records (an acknowledged record missing from the log fails the test with
# "is lost"), and the load average before and after the run.
#
# Usage: scripts/perf/freeze10.sh [ROUNDS] [OUTDIR]   (from the repository root)
# RDKAFKA_CONF="key=value,..." adds librdkafka settings to its producer; CLIENTS picks
# the tests (default "Franz Librdkafka"). Issue 21's client-setting runs:
#   CLIENTS=Librdkafka RDKAFKA_CONF="socket.timeout.ms=8000,request.timeout.ms=7000" \
#     scripts/perf/freeze10.sh 10 /tmp/freeze10-rdk
set -eu
rounds=${1:-10}
out=${2:-/tmp/freeze10}
mkdir -p "$out"
CGO_ENABLED=0 go test -c -o "$out/e2e.test" ./e2e
cd e2e
for i in $(seq 1 "$rounds"); do
	for t in ${CLIENTS:-Franz Librdkafka}; do
		log="$out/$t-$i.log"
		before=$(cut -d' ' -f1 /proc/loadavg)
		start=$(date +%s)
		if "$out/e2e.test" -test.run "^TestFaultFreeze$t\$" -test.count=1 -test.v >"$log" 2>&1; then res=PASS; else res=FAIL; fi
		after=$(cut -d' ' -f1 /proc/loadavg)
		gap=$(sed -n 's/.*longest ack gap \([0-9.]*m\{0,1\}s\).*/\1/p' "$log" | head -1)
		failed=$(sed -n 's/.*acknowledged, \([0-9]*\) failed.*/\1/p' "$log" | head -1)
		lost=$(grep -c "is lost" "$log" || true)
		echo "$t run=$i $res gap=${gap:-?} failed=${failed:-?} lost=$lost load=$before/$after wall=$(( $(date +%s) - start ))s"
	done
done
