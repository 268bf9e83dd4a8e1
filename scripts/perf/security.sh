#!/bin/bash
# Issue 14's security figures: one node with a PLAINTEXT and a SASL_SSL listener
# (SCRAM-SHA-512, ECDSA P-256 certificate), and per round, interleaved:
#   produce and consume throughput over PLAINTEXT, then over SASL_SSL;
#   1,000 new connections (ApiVersions answered), PLAINTEXT, then SASL_SSL;
# with the load average before each run and the node's CPU (/proc/PID/stat) over it.
#   usage: scripts/perf/security.sh [ROUNDS]  (env: SKIFF=./skiff, WORK=/tmp/skiff-sec,
#          PORT=22100: Kafka PORT (plain) and PORT+1 (SASL_SSL), etcd PORT+2/+3, HTTP PORT+4)
# One JSON line per run goes to $WORK/results.jsonl; a table is printed at the end.
set -eu
ROUNDS=${1:-3}; HERE=$(cd "$(dirname "$0")" && pwd)
S=$(realpath "${SKIFF:-./skiff}"); WORK=${WORK:-/tmp/skiff-sec}; P=${PORT:-22100}
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$WORK"
OUT=$WORK/results.jsonl; : > $OUT

# A CA and the node's certificate for 127.0.0.1.
openssl ecparam -name prime256v1 -genkey -noout -out ca-key.pem
openssl req -x509 -new -key ca-key.pem -subj /CN=perf-ca -days 2 -out ca.pem 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out node-key.pem
openssl req -new -key node-key.pem -subj /CN=node -out node.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > ext
openssl x509 -req -in node.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile ext -out node.pem 2>/dev/null

PLAIN=127.0.0.1:$P; SSL=127.0.0.1:$((P+1)); HTTP=127.0.0.1:$((P+4))
$S serve --data-dir $WORK/data --listeners PLAINTEXT://$PLAIN,SASL_SSL://$SSL \
  --tls-cert node.pem --tls-key node-key.pem --sasl-mechanisms SCRAM-SHA-512,SCRAM-SHA-256 \
  --etcd-client 127.0.0.1:$((P+2)) --etcd-peer 127.0.0.1:$((P+3)) --http $HTTP \
  --log-format json > node.log 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for i in $(seq 1 3000); do grep -q '"skiff is ready"' node.log && break; sleep 0.01; done
grep -q '"skiff is ready"' node.log || { cat node.log; exit 1; }

printf 'bench-password-1\n' > pw
$S user create bench -b $PLAIN --password-stdin < pw >/dev/null
SEC=(-b $SSL --tls --tls-ca ca.pem --sasl-mechanism SCRAM-SHA-512 --user bench --password-file pw)
$S topic create t -b $PLAIN -p 4 >/dev/null
$S topic create u -b $PLAIN -p 4 >/dev/null

ticks() { awk '{print $14+$15}' /proc/$pid/stat; }
run() { # round name bench-args...
  local r=$1 name=$2; shift 2
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  local c0 t0 c1 t1 j; c0=$(ticks); t0=$(date +%s.%N)
  j=$($S bench "$@" --json)
  c1=$(ticks); t1=$(date +%s.%N)
  python3 -c 'import json,sys
r,n,j,load,c,w=sys.argv[1:]
print(json.dumps({"round":int(r),"name":n,"load1":float(load),"node_cpu_s":int(c)/100,"wall_s":float(w),"result":json.loads(j)}))' \
    "$r" "$name" "$j" "$load" "$((c1-c0))" "$(echo "$t1 - $t0" | bc)" >> $OUT
  echo "round $r $name done (load $load)" >&2
}

for r in $(seq 1 $ROUNDS); do
  # Produce into t over PLAINTEXT and into u over SASL_SSL, the same amount of time.
  run $r produce-plain produce -b $PLAIN -t t -d 10s --http $HTTP
  run $r produce-sasl_ssl produce "${SEC[@]}" -t u -d 10s --http $HTTP
  # Both consume the same topic t from its start (it grows by one produce per round).
  run $r consume-plain consume -b $PLAIN -t t --http $HTTP
  run $r consume-sasl_ssl consume "${SEC[@]}" -t t --http $HTTP
  run $r connect-plain connect -b $PLAIN -n 1000 -c 8
  run $r connect-sasl_ssl connect "${SEC[@]}" -n 1000 -c 8
done
curl -s http://$HTTP/metrics | grep -E '^skiff_fetch_bytes_(sendfile|copied)_total' > fetch_metrics.txt || true
python3 $HERE/security.py $OUT
cat fetch_metrics.txt
