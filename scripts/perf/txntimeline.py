#!/usr/bin/env python3
"""Server-side timeline of transactions on three nodes (docs/performance.md,
Transactions): phases of each transaction, as p50/p90 in microseconds, from the
marks that scripts/perf/txntimeline.patch adds (temporary instrumentation, not
in the tree: apply it to a scratch worktree, build, and start each node with
SKIFF_TL=DIR/tl, which writes DIR/tl.<pid> with wall-clock microseconds).

  git apply scripts/perf/txntimeline.patch && CGO_ENABLED=0 go build -o /tmp/tl/skiff ./cmd/skiff
  SKIFF_TL=/tmp/tl/tl skiff serve ...   # three nodes, as scripts/perf/txn.sh starts them
  txnsteps -b ADDR -t T -n 200 -z none -letters
  scripts/perf/txntimeline.py /tmp/tl/tl.*      # add -v to print the last transaction's marks

Events: req/resp (a request read and answered, with client id), append / hw (a
batch appended, the high watermark moved), rfetch (a follower's fetch read by
the leader), fsend/frecv (a follower's fetch sent and answered), verify-send /
verify-recv (a leader's KIP-890 verification with a remote coordinator),
verify-check (the coordinator's in-memory check), txnrec-append /
txnrec-committed (a __transaction_state record), markers-start/markers-done,
wtm-send / kconn-wrote / wtm-head / wtm-recv (a WriteTxnMarkers request taken,
written, its frame's head read by the leader, answered), notify (a coordinator's
notices sent) and noticed (a batch appended under a notice, not verified).
"""
import sys
from collections import defaultdict


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * q))]


def main(paths):
    verbose = '-v' in paths
    lines = []
    for p in paths:
        if p == '-v':
            continue
        with open(p) as f:
            lines += [l.split() for l in f if l.strip()]
    lines.sort(key=lambda l: int(l[0]))
    D = defaultdict(list)
    st, prod, vsend, vsrv, wreq, appended = {}, {}, {}, {}, {}, {}
    txrec = None
    for l in lines:
        t, node, ev = int(l[0]), l[1], l[2]
        if ev == 'req' and l[3] == 'EndTxn':
            st = {'end': t}
        elif ev == 'resp' and l[3] == 'key=26' and 'end' in st:
            st['endresp'] = t
            D['EndTxn: read -> answered (PrepareCommit committed)'].append(t - st['end'])
        elif ev == 'markers-start':
            st['ms'], st['wtm'] = t, set()
        elif ev == 'req' and l[3] == 'WriteTxnMarkers' and 'ms' in st and node not in st['wtm']:
            # The first per leader after markers-start: later ones are notices.
            st['wtm'].add(node)
            wreq[node] = t
            D['markers: start -> WriteTxnMarkers read by a leader'].append(t - st['ms'])
        elif ev == 'resp' and l[3] == 'key=27' and node in wreq:
            D['markers: WriteTxnMarkers read -> answered (marker committed)'].append(t - wreq.pop(node))
        elif ev == 'markers-done' and 'ms' in st:
            st['md'] = t
            D['markers: start -> all committed'].append(t - st['ms'])
        elif ev == 'req' and l[3] == 'AddPartitionsToTxn' and l[4] != 'v4' and 'endresp' in st and 'apt' not in st:
            st['apt'] = t
            D['client: EndTxn answered -> AddPartitionsToTxn read'].append(t - st['endresp'])
        elif ev == 'txnrec-append':
            txrec = t
        elif ev == 'txnrec-committed' and txrec is not None:
            D['__transaction_state record: append -> committed'].append(t - txrec)
            txrec = None
            if 'md' in st and 'oc' not in st:
                st['oc'] = t
                D['markers done -> next Ongoing committed'].append(t - st['md'])
        elif ev == 'resp' and l[3] == 'key=24' and 'client=skiff-broker' not in l[4]:
            st['aptresp'] = t
        elif ev == 'req' and l[3] == 'Produce':
            prod[node] = t
            if 'aptresp' in st and 'p0' not in st:
                st['p0'] = t
                D['client: AddPartitionsToTxn answered -> first Produce read'].append(t - st['aptresp'])
        elif ev == 'verify-send':
            vsend[node] = t
        elif ev == 'req' and l[3] == 'AddPartitionsToTxn' and l[4] == 'v4':
            src = l[5].split('broker-')[-1]
            vsrv[src] = t
        elif ev == 'resp' and l[3] == 'key=24' and 'client=skiff-broker' in l[4]:
            src = l[4].split('broker-')[-1]
            if src in vsrv:
                D['verify: coordinator read -> answered'].append(t - vsrv.pop(src))
        elif ev == 'verify-recv' and node in vsend:
            D['verify: round trip (leader side)'].append(t - vsend.pop(node))
        elif ev == 'append' and not l[3].startswith('__'):
            appended[l[3]] = (t, int(l[4].split('=')[1]))
            if node in prod:
                D['Produce: read -> first append (verification)'].append(t - prod[node])
                del prod[node]
        elif ev == 'hw' and l[3] in appended:
            a, last = appended[l[3]]
            if int(l[4].split('=')[1]) > last:
                D['data batch: append -> high watermark past it'].append(t - a)
                del appended[l[3]]
    counts = defaultdict(int)
    for l in lines:
        if l[2] in ('noticed', 'verify-send', 'verify-check'):
            counts[l[2]] += 1
    print('batches appended under a notice %d, remote verifications %d, in-memory checks %d' %
          (counts['noticed'], counts['verify-send'], counts['verify-check']))
    for k in D:
        v = D[k]
        print('%-62s n=%5d p50=%6d p90=%6d us' % (k, len(v), pct(v, 0.5), pct(v, 0.9)))
    if verbose:
        starts = [i for i, l in enumerate(lines) if l[2] == 'req' and l[3] == 'EndTxn']
        if len(starts) >= 2:
            t0 = int(lines[starts[-2]][0])
            for l in lines[starts[-2]:starts[-1] + 1]:
                if l[2] != 'rfetch':
                    print('%9.3f %s' % ((int(l[0]) - t0) / 1000, ' '.join(l[1:])))


if __name__ == '__main__':
    main(sys.argv[1:])
