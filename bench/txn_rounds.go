package bench

// The transactional comparison (--transactional-id): idempotent producers,
// the same flushing every --txn-records records, then transactional ones,
// all with the same settings, in --rounds rounds.

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// txnRun is one of the three runs the transactional comparison makes.
type txnRun int

const (
	idempotentRun txnRun = iota
	flushedRun
	transactionalRun
)

func (r txnRun) String() string {
	switch r {
	case idempotentRun:
		return "idempotent run"
	case flushedRun:
		return "idempotent run flushing every --txn-records records"
	default:
		return "transactional run"
	}
}

// runTransactional measures idempotent producers, the same flushing every
// TxnRecords records, and transactional ones with the same settings, and
// returns the transactional result with the comparisons. The flushed run
// tells what a transaction costs beyond the Flush it needs before it commits
// (every record acknowledged), which the idempotent run hides behind the
// requests it keeps in flight.
//
// With TxnRounds > 1 each run is split into that many equal parts (of
// --duration or --records), run in rounds whose order alternates (idempotent,
// flushed, transactional, then the reverse), and the ratios are of the totals.
// A run leaves work behind it: on one node the idempotent run writes
// gigabytes into the page cache faster than the disk takes them, and the runs
// after it pay for the writeback; a shared machine's load drifts. Alternating
// short parts puts that on every run alike.
func runTransactional(ctx context.Context, cfg Config, progress *progressLine) (*Result, error) {
	rounds := max(cfg.TxnRounds, 1)
	var runs [3][]*Result
	for round := range rounds {
		order := []txnRun{idempotentRun, flushedRun, transactionalRun}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, run := range order {
			res, err := runProduce(ctx, cfg.txnRunConfig(run, round, rounds), progress)
			if err != nil {
				if rounds > 1 {
					return nil, fmt.Errorf("%s, round %d of %d: %w", run, round+1, rounds, err)
				}
				return nil, fmt.Errorf("%s: %w", run, err)
			}
			runs[run] = append(runs[run], res)
		}
	}
	base, flushed := combineRuns(runs[idempotentRun]), combineRuns(runs[flushedRun])
	res := combineRuns(runs[transactionalRun])
	t := res.Transactional
	t.IdempotentRecordsPerSec = base.RecordsPerSec
	t.FlushedRecordsPerSec = flushed.RecordsPerSec
	t.FlushedFlushLatency = flushed.Transactional.FlushLatency
	t.Ratio = ratio(res.RecordsPerSec, base.RecordsPerSec)
	t.FlushedRatio = ratio(res.RecordsPerSec, flushed.RecordsPerSec)
	if rounds > 1 {
		t.Rounds = rounds
		for i := range rounds {
			txn := runs[transactionalRun][i].RecordsPerSec
			t.RoundRatios = append(t.RoundRatios, ratio(txn, runs[idempotentRun][i].RecordsPerSec))
			t.RoundFlushedRatios = append(t.RoundFlushedRatios, ratio(txn, runs[flushedRun][i].RecordsPerSec))
		}
	}
	return res, nil
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// txnRunConfig is the configuration of one run of round round of rounds:
// producers of run's kind, with their share of --duration or --records.
func (cfg Config) txnRunConfig(run txnRun, round, rounds int) Config {
	c := cfg
	switch run {
	case idempotentRun:
		c.TransactionalID = ""
	case flushedRun:
		c.TransactionalID, c.flushEvery = "", cfg.TxnRecords
	}
	c.Duration = cfg.Duration / time.Duration(rounds)
	if cfg.Records > 0 {
		c.Records = cfg.Records / int64(rounds)
		if int64(round) < cfg.Records%int64(rounds) {
			c.Records++
		}
	}
	return c
}

// combineRuns adds up the results of one kind of run over the rounds, as if
// they were one run: records and seconds summed, latencies merged.
func combineRuns(rs []*Result) *Result {
	if len(rs) == 1 {
		return rs[0]
	}
	out := *rs[0]
	out.Records, out.Bytes, out.Failed, out.ClientCPUSeconds = 0, 0, 0, 0
	out.BrokerCPUSeconds, out.BrokerCPU = 0, append([]NodeCPU(nil), rs[0].BrokerCPU...)
	out.lat = new(histogram)
	var seconds float64
	var maxLag *float64
	if out.Transactional != nil {
		t := *out.Transactional
		t.Transactions, t.phases = 0, new(txnPhases)
		out.Transactional = &t
	}
	for i, r := range rs {
		out.Records += r.Records
		out.Bytes += r.Bytes
		out.Failed += r.Failed
		seconds += r.Seconds
		out.ClientCPUSeconds += r.ClientCPUSeconds
		out.BrokerCPUSeconds += r.BrokerCPUSeconds
		if i > 0 && len(r.BrokerCPU) == len(out.BrokerCPU) {
			for j := range out.BrokerCPU {
				out.BrokerCPU[j].CPUSeconds += r.BrokerCPU[j].CPUSeconds
			}
		}
		if out.BrokerCPUError == "" {
			out.BrokerCPUError = r.BrokerCPUError
		}
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
		out.lat.merge(r.lat)
		if r.MaxAckGapMs != nil && (out.MaxAckGapMs == nil || *r.MaxAckGapMs > *out.MaxAckGapMs) {
			out.MaxAckGapMs, out.MaxAckGapPartition = r.MaxAckGapMs, r.MaxAckGapPartition
		}
		if r.MaxSendLagMs != nil && (maxLag == nil || *r.MaxSendLagMs > *maxLag) {
			maxLag = r.MaxSendLagMs
		}
		if t := out.Transactional; t != nil && r.Transactional != nil {
			t.Transactions += r.Transactional.Transactions
			t.phases.merge(r.Transactional.phases)
		}
	}
	out.MaxSendLagMs = maxLag
	out.setElapsed(int64(seconds * 1e9))
	out.setCPUPerGB()
	s := out.lat.summary()
	out.ProduceLatency = &s
	if t := out.Transactional; t != nil {
		t.setPhases()
	}
	return &out
}
