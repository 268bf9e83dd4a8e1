#!/bin/bash
# usage: node.sh NAME [extra serve args...]   (env: SKIFF, WORK as in round.sh)
# starts skiff serve on loopback (Kafka and HTTP on port 0, etcd on free high ports)
# and prints: PID KAFKA_ADDR ETCD_CLIENT READY_SECONDS (process start to the ready line's time)
name=$1; shift
d=${WORK:-/tmp/skiff-perf}/$name; rm -rf $d; mkdir -p $d; : > $d/log
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
ec=127.0.0.1:$(port); ep=127.0.0.1:$(port)
start=$(date +%s.%N)
${SKIFF:-./skiff} serve --data-dir $d/data --listen 127.0.0.1:0 --http 127.0.0.1:0 --etcd-client $ec --etcd-peer $ep --log-format json "$@" >$d/log 2>&1 &
pid=$!
echo $pid > $d/pid
for i in $(seq 1 3000); do
  grep -q '"skiff is ready"' $d/log && break
  kill -0 $pid 2>/dev/null || { echo "node $name died" >&2; cat $d/log >&2; exit 1; }
  sleep 0.01
done
python3 - "$d/log" "$start" "$pid" "$ec" <<'PY'
import json,sys,datetime
log,start,pid,ec=sys.argv[1],float(sys.argv[2]),sys.argv[3],sys.argv[4]
for line in open(log):
    try: r=json.loads(line)
    except Exception: continue
    if r.get("msg")=="skiff is ready":
        t=datetime.datetime.fromisoformat(r["time"].replace("Z","+00:00")).timestamp()
        print(pid, r["kafka"], ec, "%.3f"%(t-start))
        break
PY
