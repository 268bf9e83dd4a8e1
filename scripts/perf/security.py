#!/usr/bin/env python3
"""Summarise scripts/perf/security.sh's results.jsonl: per round, SASL_SSL against
the same round's PLAINTEXT run (ratios), and the node's CPU per GB."""
import json, sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {(r["round"], r["name"]): r for r in rows}
rounds = sorted({r["round"] for r in rows})

def fig(r, kind):
    res = r["result"]
    if kind == "connect":
        return res["seconds"], "%.2f s (p50 %.1f ms, %d failed)" % (res["seconds"], res["latency"]["p50_ms"], res["failed"])
    gb = res["bytes"] / 1e9
    cpu = res.get("broker_cpu_seconds") or r["node_cpu_s"]
    return res["mb_per_sec"], "%.1f MB/s, node %.2f s CPU/GB, %d failed" % (res["mb_per_sec"], cpu / gb if gb else 0, res["failed"])

for kind in ("produce", "consume", "connect"):
    print("## " + kind)
    for rd in rounds:
        p, s = by.get((rd, kind + "-plain")), by.get((rd, kind + "-sasl_ssl"))
        if not p or not s:
            continue
        pv, pt = fig(p, kind)
        sv, st = fig(s, kind)
        ratio = sv / pv  # throughput: SASL_SSL / PLAINTEXT; connect: time SASL_SSL / PLAINTEXT
        print("round %d  load %.2f/%.2f  PLAINTEXT %s | SASL_SSL %s | ratio %.2f (node CPU %.2f s over %.1f s | %.2f s over %.1f s)" % (
            rd, p["load1"], s["load1"], pt, st, ratio, p["node_cpu_s"], p["wall_s"], s["node_cpu_s"], s["wall_s"]))
