#!/usr/bin/env python3
"""Summary of scripts/perf/tv2.sh's JSON lines (docs/performance.md, Transactions):
per tag, configuration and transaction version, each round's ratio (transactional /
idempotent records/s), the flushed ratio (transactional / idempotent flushing every
--txn-records, when the bench ran that), idempotent and transactional records/s, transactions a second,
txn_flush p50, the nodes' CPU seconds over wall seconds, the load average, and the
implicit adds (first_writes.added: > 0 only when franz-go ran TV2) and the nodes' Go
allocations and collections when recorded; then TV2/TV1 of
the transactional records/s per round, and under TV2 read_committed /
read_uncommitted consume records/s.
  usage: scripts/perf/tv2sum.py tv2.jsonl...
"""
import json
import sys
from collections import defaultdict


def main(paths):
    runs = [json.loads(l) for p in paths for l in open(p) if l.strip()]
    by = defaultdict(list)
    for r in runs:
        by[(r['tag'], r['conf'], r['tv'])].append(r)
    for (tag, conf, tv), rs in sorted(by.items()):
        print(f'{tag} conf={conf} tv={tv}')
        for r in sorted(rs, key=lambda r: r['round']):
            t = r['result']['transactional']
            txn = r['result']['records_per_sec']
            fw = r.get('first_writes', {})
            fl = (f"  flushed {t['flushed_ratio']:.2f} ({t['flushed_records_per_sec']/1e3:.0f}k,"
                  f" Flush p50 {t['flushed_flush']['p50_ms']:.2f} ms)" if t.get('flushed_ratio') else '')
            print(f"  r{r['round']} ratio {t['ratio']:.2f}{fl}  idem {t['idempotent_records_per_sec']/1e3:.0f}k"
                  f"  txn {txn/1e3:.0f}k  {t['transactions']/r['result']['seconds']:.0f} txn/s"
                  f"  flush p50 {t['txn_flush']['p50_ms']:.2f} ms  end p50 {t['txn_end']['p50_ms']:.2f} ms"
                  f"  cpu/wall {r['server_cpu_s']/r['wall_s']:.2f}  load {r['load'].split()[0]}"
                  f"  added {fw.get('added', 0)} asked {fw.get('asked', 0)} noticed {fw.get('noticed', 0)}"
                  + (f"  alloc {r['go_mem']['alloc']/1e9:.2f} GB gcs {r['go_mem']['gcs']}" if 'go_mem' in r else ''))
            if t.get('rounds'):
                print(f"     {t['rounds']} bench rounds: ratio " + ' '.join(f'{x:.2f}' for x in t['round_ratios'])
                      + '; flushed ratio ' + ' '.join(f'{x:.2f}' for x in t['round_flushed_ratios']))
            c = r.get('consume') or {}
            if c:
                rc, ru = c['read_committed'], c['read_uncommitted']
                print(f"     consume read_committed {rc['records_per_sec']/1e3:.0f}k ({rc['records']} records),"
                      f" read_uncommitted {ru['records_per_sec']/1e3:.0f}k ({ru['records']}):"
                      f" rc/ru {rc['records_per_sec']/ru['records_per_sec']:.2f}")
    pairs = defaultdict(dict)
    for r in runs:
        pairs[(r['tag'], r['conf'], r['round'])][r['tv']] = r
    print('TV2/TV1 (transactional records/s; ratio TV2, ratio TV1):')
    for (tag, conf, rnd), tvs in sorted(pairs.items()):
        if 1 in tvs and 2 in tvs:
            a, b = tvs[1]['result'], tvs[2]['result']
            print(f"  {tag} conf={conf} r{rnd}: {b['records_per_sec']/a['records_per_sec']:.2f}"
                  f"  ({b['transactional']['ratio']:.2f} / {a['transactional']['ratio']:.2f})")


if __name__ == '__main__':
    main(sys.argv[1:])
