#!/usr/bin/env python3
"""Summarize scripts/perf/cost.sh's rounds: CPU per GB and same-run ratios.

usage: python3 scripts/perf/cost.py /tmp/skiff-cost/cost.jsonl
"""
import json
import statistics
import sys


def rows(result):
    rs = result.get("rows") or result.get("baseline", {}).get("rows", [])
    return {r["name"]: r for r in rs}


def cpu(result, name):
    r = rows(result).get(name)
    return r.get("cpu_seconds_per_gb") if r else None


rounds = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    rounds.setdefault(d["round"], {})[d["name"]] = d["result"]

lines = {}


def add(key, value):
    if value is not None:
        lines.setdefault(key, []).append(value)


for r, m in sorted(rounds.items()):
    base, prod, cons = m.get("baseline"), m.get("produce"), m.get("consume")
    if base:
        for name in ("bare_receiver_read_write", "bare_receiver_splice", "page_cache_write", "sendfile_loopback"):
            add("baseline alone: %s s CPU/GB" % name, cpu(base, name))
    if prod:
        b = prod["broker_cpu_seconds_per_gb"]
        add("produce MB/s", prod["mb_per_sec"])
        add("produce: broker s CPU/GB", b)
        add("produce: client s CPU/GB", prod["client_cpu_seconds_per_gb"])
        add("produce --baseline: null_kafka_server s CPU/GB", cpu(prod, "null_kafka_server"))
        if cpu(prod, "null_kafka_server"):
            add("produce: broker / null_kafka_server", b / cpu(prod, "null_kafka_server"))
        for name in ("bare_receiver_read_write", "bare_receiver_splice"):
            add("produce --baseline: %s s CPU/GB" % name, cpu(prod, name))
            add("produce: broker / %s (after the run)" % name, b / cpu(prod, name))
            if base:
                add("produce: broker / %s (baseline alone)" % name, b / cpu(base, name))
    if cons:
        b = cons["broker_cpu_seconds_per_gb"]
        add("consume MB/s", cons["mb_per_sec"])
        add("consume: broker s CPU/GB", b)
        add("consume: client s CPU/GB", cons["client_cpu_seconds_per_gb"])
        add("consume --baseline: null_kafka_server s CPU/GB", cpu(cons, "null_kafka_server"))
        if cpu(cons, "null_kafka_server"):
            add("consume: broker / null_kafka_server", b / cpu(cons, "null_kafka_server"))
        add("consume --baseline: sendfile_loopback s CPU/GB", cpu(cons, "sendfile_loopback"))
        add("consume: broker / sendfile (after the run)", b / cpu(cons, "sendfile_loopback"))
        if base:
            add("consume: broker / sendfile (baseline alone)", b / cpu(base, "sendfile_loopback"))

for key, vs in lines.items():
    print("%-60s median %7.3f  [%s]" % (key, statistics.median(vs), ", ".join("%.3f" % v for v in vs)))
