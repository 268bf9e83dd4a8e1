// Command txnsteps times where a transaction's time goes (docs/performance.md,
// Transactions): one franz-go transactional producer runs N transactions of R
// records back to back and prints, as one JSON line, the transactions a second,
// the client's phases per transaction (produce+flush, EndTransaction) and the
// per-request latency of each request key (franz-go HookBrokerE2E: from the
// request written to its response read, that is the broker's time plus loopback).
// With -group G each transaction also commits an offset of G in it, as a
// GroupTransactSession does (AddOffsetsToTxn, then TxnOffsetCommit).
//
//	go run ./scripts/perf/txnsteps -b ADDR -t T [-n 300] [-r 1000] [-rf 3] [-group G]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type hook struct {
	mu    sync.Mutex
	lat   map[string][]time.Duration
	nodes map[string]int32 // the broker that last answered each key
	trace bool             // print each request's span (ms since t0) to stderr
	t0    time.Time        // the traced transaction's start
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (h *hook) OnBrokerE2E(m kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if e.Err() != nil {
		return
	}
	h.mu.Lock()
	h.lat[kmsg.NameForKey(key)] = append(h.lat[kmsg.NameForKey(key)], e.ReadWait+e.TimeToRead)
	h.nodes[kmsg.NameForKey(key)] = m.NodeID
	if h.trace {
		// The hook runs once the response is read: the request was written
		// ReadWait+TimeToRead before.
		now := time.Since(h.t0)
		fmt.Fprintf(os.Stderr, "%8.3f %8.3f %s broker %d\n", ms(now-e.ReadWait-e.TimeToRead), ms(now), kmsg.NameForKey(key), m.NodeID)
	}
	h.mu.Unlock()
}

// concurrent counts the client's retries after CONCURRENT_TRANSACTIONS (each
// backs off 20 ms by default).
type concurrent struct{ n atomic.Int64 }

func (c *concurrent) Level() kgo.LogLevel { return kgo.LogLevelDebug }
func (c *concurrent) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.Contains(msg, "CONCURRENT_TRANSACTIONS") {
		c.n.Add(1)
	}
}

func (h *hook) reset() {
	h.mu.Lock()
	h.lat = map[string][]time.Duration{}
	h.mu.Unlock()
}

type stat struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	Avg float64 `json:"mean_ms"`
}

func summarize(ds []time.Duration) stat {
	if len(ds) == 0 {
		return stat{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return stat{N: len(ds), P50: ms(ds[len(ds)/2]), P90: ms(ds[len(ds)*9/10]), Avg: ms(sum / time.Duration(len(ds)))}
}

func main() {
	brokers := flag.String("b", "127.0.0.1:9092", "bootstrap brokers, comma-separated")
	topic := flag.String("t", "txnsteps", "topic (created with -p partitions and -rf replicas unless it exists)")
	parts := flag.Int("p", 6, "partitions")
	rf := flag.Int("rf", 3, "replication factor")
	n := flag.Int("n", 300, "transactions")
	recs := flag.Int("r", 1000, "records per transaction")
	size := flag.Int("s", 1024, "record value bytes")
	id := flag.String("id", "txnsteps", "transactional id")
	z := flag.String("z", "snappy", "batch compression: snappy (franz-go's default) or none (the bench's default)")
	letters := flag.Bool("letters", false, "fill values with random lower-case letters as the bench does (default: zeros, which snappy shrinks ~20x)")
	idem := flag.Bool("idem", false, "idempotent, not transactional: each \"transaction\" is its records and a Flush, to tell the transaction's cost from that of a flushed 1 MB")
	batch := flag.Int("batch", 0, "producer batch max bytes (0: franz-go's, 1 MB)")
	trace := flag.Int("trace", 0, "after the run, trace this many transactions' requests to stderr")
	group := flag.String("group", "", "commit an offset of this group in each transaction (AddOffsetsToTxn + TxnOffsetCommit v3)")
	flag.Parse()
	ctx := context.Background()
	h := &hook{lat: map[string][]time.Duration{}, nodes: map[string]int32{}}
	conc := &concurrent{}
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(*brokers, ",")...), kgo.DefaultProduceTopic(*topic),
		kgo.WithHooks(h), kgo.WithLogger(conc)}
	if !*idem {
		opts = append(opts, kgo.TransactionalID(*id))
	}
	if *batch > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(*batch)))
	}
	switch *z {
	case "snappy":
	case "none":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	default:
		fail(fmt.Errorf("-z %q: want snappy or none", *z))
	}
	k, err := kgo.NewClient(opts...)
	if err != nil {
		fail(err)
	}
	defer k.Close()
	adm := kadm.NewClient(k)
	cfg := map[string]*string{}
	if *rf > 1 {
		two := "2"
		cfg["min.insync.replicas"] = &two
	}
	if _, err := adm.CreateTopic(ctx, int32(*parts), int16(*rf), cfg, *topic); err != nil && !strings.Contains(err.Error(), kerr.TopicAlreadyExists.Message) {
		fail(err)
	}
	value := make([]byte, *size)
	if *letters {
		for i := range value {
			value[i] = 'a' + byte(rand.IntN(26))
		}
	}
	var commits int64
	// retry sends until the answer is not retriable (the coordinators load
	// __consumer_offsets on first use), for 30 s at most.
	retry := func(what string, send func() error) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := send()
			if err == nil {
				return
			}
			if !kerr.IsRetriable(err) || time.Now().After(deadline) {
				fail(fmt.Errorf("%s: %w", what, err))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	commitOffset := func() { // AddOffsetsToTxn then TxnOffsetCommit, as a GroupTransactSession
		pid, epoch, err := k.ProducerID(ctx)
		if err != nil {
			fail(err)
		}
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = *id, pid, epoch, *group
		retry("AddOffsetsToTxn", func() error {
			resp, err := ao.RequestWith(ctx, k)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			return err
		})
		commits++
		tc := kmsg.NewPtrTxnOffsetCommitRequest()
		tc.SetVersion(3)
		tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = *id, *group, pid, epoch, -1
		tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		tp.Offset = commits
		tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: *topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{tp}}}
		retry("TxnOffsetCommit", func() error {
			tr, err := tc.RequestWith(ctx, k)
			if err == nil {
				err = kerr.ErrorForCode(tr.Topics[0].Partitions[0].ErrorCode)
			}
			return err
		})
	}
	if *group != "" { // creates __consumer_offsets, which AddOffsetsToTxn needs
		retry("FindCoordinator", func() error {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKey = *group
			resp, err := fc.RequestWith(ctx, k)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			return err
		})
	}
	run := func(txns int) (flush, end []time.Duration, took time.Duration) {
		start := time.Now()
		for range txns {
			if !*idem {
				if err := k.BeginTransaction(); err != nil {
					fail(err)
				}
			}
			t0 := time.Now()
			for range *recs {
				k.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						fail(err)
					}
				})
			}
			if err := k.Flush(ctx); err != nil {
				fail(err)
			}
			if *group != "" && !*idem {
				commitOffset()
			}
			t1 := time.Now()
			if !*idem {
				if err := k.EndTransaction(ctx, kgo.TryCommit); err != nil {
					fail(err)
				}
			}
			flush, end = append(flush, t1.Sub(t0)), append(end, time.Since(t1))
		}
		return flush, end, time.Since(start)
	}
	run(20) // warm-up: connections, metadata, producer id
	h.reset()
	conc.n.Store(0)
	stateRecords := func() int64 { // in __transaction_state, all partitions
		ends, err := adm.ListEndOffsets(ctx, "__transaction_state")
		if err != nil {
			fail(err)
		}
		var sum int64
		ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
		return sum
	}
	state0 := stateRecords()
	flush, end, took := run(*n)
	state1 := stateRecords()
	out := map[string]any{
		"transactions":    *n,
		"txns_per_sec":    float64(*n) / took.Seconds(),
		"ms_per_txn":      float64(took.Microseconds()) / 1000 / float64(*n),
		"produce_flush":   summarize(flush),
		"end_transaction": summarize(end),
		// __transaction_state records written per transaction
		"state_records_per_txn": float64(state1-state0) / float64(*n),
	}
	h.mu.Lock()
	reqs := map[string]stat{}
	for key, ds := range h.lat {
		reqs[key] = summarize(ds)
	}
	h.mu.Unlock()
	out["requests"] = reqs
	// AddOffsetsToTxn and TxnOffsetCommit on different brokers: a TxnOffsetCommit
	// that verifies asks another broker.
	out["brokers"] = maps.Clone(h.nodes)
	out["concurrent_transactions_retries"] = conc.n.Load()
	for range *trace {
		h.mu.Lock()
		h.trace, h.t0 = true, time.Now()
		h.mu.Unlock()
		f, e, _ := run(1)
		fmt.Fprintf(os.Stderr, "%8.3f flushed, %8.3f committed\n", ms(f[0]), ms(f[0]+e[0]))
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "txnsteps:", err)
	os.Exit(1)
}
