#!/usr/bin/env python3
"""Summarizes scripts/perf/produce11.sh: per round and setup, MB/s and server CPU
seconds per GB of each build, and the ratios new/base (median over rounds)."""
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    res = r["result"] or {}
    mbps = res.get("mb_per_sec")
    gb = (res.get("bytes") or (mbps or 0) * 1e6 * r["wall_s"]) / 1e9
    by[(r["round"], r["name"], r["tag"])] = (mbps, r["server_cpu_s"] / gb if gb else None, r["load1"])
for name in ("one", "rf3"):
    tp, cpu = [], []
    for rnd in sorted({k[0] for k in by}):
        b, n = by.get((rnd, name, "base")), by.get((rnd, name, "new"))
        if not b or not n or not b[0] or not n[0]:
            continue
        tp.append(n[0] / b[0]); cpu.append(n[1] / b[1])
        print(f"{name} round {rnd}: base {b[0]:.1f} MB/s {b[1]:.2f} cpu-s/GB (load {b[2]}), new {n[0]:.1f} MB/s {n[1]:.2f} cpu-s/GB (load {n[2]}); MB/s ratio {tp[-1]:.3f}, cpu/GB ratio {cpu[-1]:.3f}")
    if tp:
        print(f"{name}: median MB/s ratio new/base {statistics.median(tp):.3f}, median cpu/GB ratio {statistics.median(cpu):.3f} over {len(tp)} rounds")
