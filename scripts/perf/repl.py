#!/usr/bin/env python3
"""Summarize scripts/perf/repl.sh's rounds: per tag (serve args), RF 3 against one node.

usage: python3 scripts/perf/repl.py /tmp/skiff-repl/repl.jsonl
"""
import json
import statistics
import sys

def bucket_quantile(buckets, q):
    """The upper bound of the cumulative histogram bucket holding quantile q."""
    bs = sorted(((float(b["le"]), b["n"]) for b in buckets), key=lambda x: x[0])
    total = bs[-1][1] if bs else 0
    for le, n in bs:
        if total and n >= q * total:
            return le
    return float("nan")


runs = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    runs.setdefault((d["tag"], d["round"]), {})[d["name"]] = d["result"]

rows = {}
for (tag, r), m in sorted(runs.items()):
    one, rf3, rate, waits = m.get("one"), m.get("rf3"), m.get("rf3_20mbs"), m.get("ack_wait")
    reqs, rate_reqs = m.get("rf3_requests"), m.get("rf3_20mbs_requests")
    base = m.get("baseline")
    vals = rows.setdefault(tag, {})
    if base and base.get("bare_replication_ratio"):
        # skiff bench baseline's floor: bare replication's CPU per GB / the read+write receiver's
        vals.setdefault("floor: bare replication / bare receiver", []).append(base["bare_replication_ratio"])
        if one and rf3:
            vals.setdefault("(RF3 / one node, CPU/GB) / floor", []).append(
                rf3["broker_cpu_seconds_per_gb"] / one["broker_cpu_seconds_per_gb"] / base["bare_replication_ratio"])
    if one and rf3:
        vals.setdefault("RF3 MB/s", []).append(rf3["mb_per_sec"])
        vals.setdefault("RF3 / one node, MB/s", []).append(rf3["mb_per_sec"] / one["mb_per_sec"])
        vals.setdefault("one node s CPU/GB", []).append(one["broker_cpu_seconds_per_gb"])
        vals.setdefault("RF3 s CPU/GB (3 nodes)", []).append(rf3["broker_cpu_seconds_per_gb"])
        vals.setdefault("RF3 / one node, CPU/GB", []).append(
            rf3["broker_cpu_seconds_per_gb"] / one["broker_cpu_seconds_per_gb"])
    if rf3 and reqs:  # the three nodes' requests handled during the RF 3 run
        vals.setdefault("RF3 Produce requests per GB", []).append(reqs["Produce"] / (rf3["bytes"] / 1e9))
        vals.setdefault("RF3 Fetch requests per GB", []).append(reqs["Fetch"] / (rf3["bytes"] / 1e9))
    if rate:
        vals.setdefault("20 MB/s linger 0: 3 nodes' CPU s per 10 s", []).append(rate["broker_cpu_seconds"] * 10 / rate["seconds"])
        vals.setdefault("20 MB/s linger 0: p99 ms", []).append(rate["produce_latency"]["p99_ms"])
        vals.setdefault("20 MB/s linger 0: p50 ms", []).append(rate["produce_latency"]["p50_ms"])
        vals.setdefault("20 MB/s linger 0: sender lag ms", []).append(rate.get("max_send_lag_ms") or 0)
    if rate and rate_reqs:
        vals.setdefault("20 MB/s: Produce requests per s (3 nodes)", []).append(rate_reqs["Produce"] / rate["seconds"])
        vals.setdefault("20 MB/s: Fetch requests per s (3 nodes)", []).append(rate_reqs["Fetch"] / rate["seconds"])
        # The load moves how franz-go batches (fewer, larger requests on a busy machine):
        # the CPU per request is steadier across rounds than the CPU per 10 s.
        vals.setdefault("20 MB/s: 3 nodes' CPU us per request", []).append(
            rate["broker_cpu_seconds"] * 1e6 / max(rate_reqs["Produce"] + rate_reqs["Fetch"], 1))
    kern = m.get("rf3_20mbs_kernel")
    if kern and rate_reqs:  # the three nodes' kernel counters during the 20 MB/s run, per request
        n = max(rate_reqs["Produce"] + rate_reqs["Fetch"], 1)
        for k, label in (("vcs", "voluntary context switches"), ("ics", "involuntary context switches"),
                         ("reads", "read calls"), ("writes", "write calls")):
            vals.setdefault("20 MB/s: %s per request" % label, []).append(kern[k] / n)
    if waits:  # the leaders' acknowledgement waits (skiff_produce_ack_wait_seconds), at bucket bounds
        for q in (0.5, 0.99):
            vals.setdefault("20 MB/s: leaders' ack wait p%d ms (<=)" % round(q * 100), []).append(bucket_quantile(waits, q) * 1000)

for tag, vals in rows.items():
    print(tag)
    for key, vs in vals.items():
        print("  %-45s median %8.3f  [%s]" % (key, statistics.median(vs), ", ".join("%.3f" % v for v in vs)))
