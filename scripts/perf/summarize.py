# Medians and per-round values of the JSON lines scripts/perf/round.sh wrote:
#   python3 scripts/perf/summarize.py RESULTS.jsonl
import json,statistics,sys
rows=[json.loads(l) for l in open(sys.argv[1] if len(sys.argv)>1 else '/tmp/skiff-perf/results.jsonl')]
by={}
for r in rows: by.setdefault(r['name'],[]).append(r)
def med(xs): 
    xs=[x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
def fmt(xs,f="%.1f"):
    xs=[x for x in xs if x is not None]
    return (f%med(xs))+"  ["+", ".join(f%x for x in xs)+"]" if xs else "-"
def get(r,path):
    d=r
    for k in path.split('.'):
        if d is None: return None
        d=d.get(k) if isinstance(d,dict) else None
    return d
print("rounds:", sorted(set(r['round'] for r in rows)))
ri=by.get('ready-idle',[])
print("ready s:", fmt([r['result']['ready_s'] for r in ri],"%.3f"))
print("idle RSS MB:", fmt([r['result']['idle_rss_kb']/1024 for r in ri]))
print("loadavg:", [r['result'].get('loadavg') for r in ri])
for name in ['single-produce','single-produce-always','single-produce-2','rf3-produce','single-consume']:
    rs=by.get(name,[])
    print(f"\n{name}: n={len(rs)}")
    print("  MB/s:", fmt([get(r,'result.mb_per_sec') for r in rs]))
    for b in ['loopback_tcp','page_cache_write','fdatasync_write','sendfile_loopback','copy_loopback','null_kafka_server']:
        print(f"  baseline {b}:", fmt([next((x['mb_per_sec'] for x in (get(r,'result.baseline.rows') or []) if x['name']==b),None) for r in rs]), " ratio:", fmt([get(r,'result.ratios.'+b) for r in rs],"%.3f"))
    print("  client cpu s:", fmt([get(r,'result.client_cpu_seconds') for r in rs],"%.2f"), " server cpu s:", fmt([r.get('server_cpu_s') for r in rs],"%.2f"), " secs:", fmt([get(r,'result.seconds') for r in rs],"%.2f"))
    print("  rss max MB:", fmt([r.get('rss_max_kb',0)/1024 for r in rs]), " hwm MB:", fmt([r.get('hwm_kb',0)/1024 for r in rs]))
    print("  p50/p99 ms:", fmt([get(r,'result.produce_latency.p50_ms') for r in rs]), "/", fmt([get(r,'result.produce_latency.p99_ms') for r in rs]))
# rf3 / single ratio per round
s2={r['round']:get(r,'result.mb_per_sec') for r in by.get('single-produce-2',[])}
rf={r['round']:get(r,'result.mb_per_sec') for r in by.get('rf3-produce',[])}
print("\nrf3/single-2 per round:", fmt([rf[k]/s2[k] for k in rf if k in s2 and s2[k]],"%.3f"))
for name in ['single-rate20','single-rate20-linger0','single-rate20-linger0-replicated','single-e2e20-linger0','rf3-rate20','rf3-rate20-linger0']:
    rs=by.get(name,[])
    print(f"\n{name}: n={len(rs)} MB/s", fmt([get(r,'result.mb_per_sec') for r in rs]))
    for q in ['p50','p95','p99','p99_9','max']:
        print(f"  produce {q}:", fmt([get(r,f'result.produce_latency.{q}_ms') for r in rs],"%.2f"), ("  e2e: "+fmt([get(r,f'result.e2e_latency.{q}_ms') for r in rs],"%.2f")) if 'e2e' in name else "")
    print("  max send lag ms:", fmt([get(r,'result.max_send_lag_ms') for r in rs],"%.1f"), " client cpu:", fmt([get(r,'result.client_cpu_seconds') for r in rs],"%.2f"), " server cpu:", fmt([r.get('server_cpu_s') for r in rs],"%.2f"))
