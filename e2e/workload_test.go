package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// record is one record as produced or read: where it is and what it says. An offset
// of -1 is an acknowledgement that did not say where (librdkafka's, for a batch a
// later one proved persisted).
type record struct {
	partition int32
	offset    int64
	value     string
}

// workloadConfig shapes the producer of a workload.
type workloadConfig struct {
	// rate is the records produced per second; 0: one record after another as fast as
	// acknowledgements allow (franz-go only).
	rate int
	// deliveryTimeout is how long a record may wait for its acknowledgement before the
	// client fails it (franz-go's RecordDeliveryTimeout, librdkafka's
	// message.timeout.ms). Default 2 minutes.
	deliveryTimeout time.Duration
	// librdkafka produces with librdkafka (Debian's python3-confluent-kafka) instead of
	// franz-go: acks=all, idempotent. librdkafkaDebug is its debug setting, whose log
	// goes to librdkafkaLog.
	librdkafka      bool
	librdkafkaDebug string
	librdkafkaLog   io.Writer
	// franzOpts are added to the franz-go producer's options.
	franzOpts []kgo.Opt
}

// workload produces and consumes in the background until stop.
type workload struct {
	t          *testing.T
	nodes      []*testnode.Node
	start      time.Time
	librdkafka bool // the producer is librdkafka

	mu       sync.Mutex
	acked    []record // acknowledged records, in acknowledgement order
	failed   int      // records the client gave up on (never acknowledged)
	unsent   int      // records cancelled by the end of the run before they were sent
	consumed []record
	gaps     *ackGaps

	stop func()
	done sync.WaitGroup
}

// startWorkload runs an idempotent acks=all franz-go producer, as fast as
// acknowledgements allow with at most 2,000 records buffered, and a consumer.
func startWorkload(t *testing.T, nodes []*testnode.Node) *workload {
	return startWorkloadWith(t, nodes, workloadConfig{franzOpts: []kgo.Opt{kgo.MaxBufferedRecords(2000)}})
}

// startWorkloadWith runs the producer cfg describes and a franz-go consumer on the
// fault topic.
func startWorkloadWith(t *testing.T, nodes []*testnode.Node, cfg workloadConfig) *workload {
	if cfg.deliveryTimeout == 0 {
		cfg.deliveryTimeout = 2 * time.Minute
	}
	md, err := metadata(t, nodes[0].Addr, faultTopic)
	if err != nil {
		t.Fatal(err)
	}
	w := &workload{t: t, nodes: nodes, start: time.Now(), librdkafka: cfg.librdkafka}
	t.Logf("workload starts at %s (t=0)", w.start.Format("15:04:05.000000"))
	w.gaps = newAckGaps(w.start, int32(len(md.Topics[faultTopic].Partitions)))
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	cons, err := kgo.NewClient(append([]kgo.Opt{seeds(nodes), kgo.ConsumeTopics(faultTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, clientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.librdkafka {
		w.startLibrdkafka(ctx, cfg)
	} else {
		w.startFranz(ctx, cfg)
	}
	w.done.Add(1)
	go func() { // consumer: remembers everything it was shown
		defer w.done.Done()
		defer cons.Close()
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			w.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				w.consumed = append(w.consumed, record{r.Partition, r.Offset, string(r.Value)})
			})
			w.mu.Unlock()
		}
	}()
	return w
}

// ack records an acknowledgement the client received at time at.
func (w *workload) ack(r record, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acked = append(w.acked, r)
	w.gaps.ack(r.partition, at)
}

func (w *workload) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		w.unsent++
		return
	}
	if w.failed == 0 {
		w.t.Logf("%s: first failed record: %v", w.since(time.Now()), err)
	}
	w.failed++
}

// since formats at as seconds after the workload started, for timelines in logs.
func (w *workload) since(at time.Time) string {
	return fmt.Sprintf("t=%.2fs", at.Sub(w.start).Seconds())
}

// note logs an event of the test (a fault, a check) on the workload's timeline.
func (w *workload) note(format string, args ...any) {
	w.t.Helper()
	w.t.Logf("%s: %s", w.since(time.Now()), fmt.Sprintf(format, args...))
}

func (w *workload) startFranz(ctx context.Context, cfg workloadConfig) {
	opts := append([]kgo.Opt{seeds(w.nodes), kgo.DefaultProduceTopic(faultTopic),
		kgo.RecordDeliveryTimeout(cfg.deliveryTimeout)}, cfg.franzOpts...)
	prod, err := kgo.NewClient(append(opts, clientOpts...)...)
	if err != nil {
		w.t.Fatal(err)
	}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		defer prod.Close()
		var tick *time.Ticker
		perTick := 1
		if cfg.rate > 0 { // rate/100 records every 10 ms; a late tick is dropped, not caught up
			tick = time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			perTick = max(1, cfg.rate/100)
		}
		for i := 0; ctx.Err() == nil; {
			if tick != nil {
				select {
				case <-tick.C:
				case <-ctx.Done():
					continue
				}
			}
			for range perTick {
				v := fmt.Sprintf("v%08d", i)
				i++
				prod.Produce(ctx, &kgo.Record{Key: []byte(v[len(v)-2:]), Value: []byte(v)}, func(r *kgo.Record, err error) {
					if err != nil {
						w.fail(err)
						return
					}
					w.ack(record{r.Partition, r.Offset, string(r.Value)}, time.Now())
				})
			}
		}
		w.endGaps()
		fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer fcancel()
		prod.Flush(fctx)
	}()
}

// python3 is Debian's interpreter: the one on PATH may be another installation without
// Debian's python3-confluent-kafka and python3-kafka.
const python3 = "/usr/bin/python3"

// startLibrdkafka runs testdata/rdkafka_produce.py (librdkafka through Debian's
// python3-confluent-kafka, which `make test` installs) and reads its outcomes.
func (w *workload) startLibrdkafka(ctx context.Context, cfg workloadConfig) {
	t := w.t
	if out, err := exec.Command(python3, "-c", "import confluent_kafka").CombinedOutput(); err != nil {
		t.Fatalf("librdkafka for Python not found: install Debian's python3-confluent-kafka (make test does): %v\n%s", err, out)
	}
	var addrs []string
	for _, n := range w.nodes {
		addrs = append(addrs, n.Addr)
	}
	args := []string{"testdata/rdkafka_produce.py", strings.Join(addrs, ","), faultTopic,
		strconv.Itoa(cfg.rate), strconv.FormatInt(cfg.deliveryTimeout.Milliseconds(), 10)}
	if cfg.librdkafkaDebug != "" {
		args = append(args, cfg.librdkafkaDebug)
	}
	cmd := exec.Command(python3, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if cfg.librdkafkaLog != nil {
		cmd.Stderr = cfg.librdkafkaLog
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		<-ctx.Done()
		w.endGaps()
		stdin.Close() // the script stops producing, waits for every outcome and exits
	}()
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		done := w.readLibrdkafka(stdout)
		if err := cmd.Wait(); err != nil || !done {
			t.Errorf("rdkafka_produce.py: %v (finished: %v)\n%s", err, done, stderr.String())
		}
	}()
}

// readLibrdkafka reads rdkafka_produce.py's outcome lines until it ends, and reports
// whether it said it was done with every record.
func (w *workload) readLibrdkafka(r io.Reader) bool {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 5 && f[0] == "ack":
			p, err1 := strconv.ParseInt(f[1], 10, 32)
			off, err2 := strconv.ParseInt(f[2], 10, 64)
			ns, err3 := strconv.ParseInt(f[4], 10, 64)
			if err := errors.Join(err1, err2, err3); err != nil {
				w.t.Errorf("rdkafka_produce.py: %q: %v", sc.Text(), err)
				continue
			}
			w.ack(record{int32(p), off, f[3]}, time.Unix(0, ns))
		case len(f) >= 2 && f[0] == "fail":
			w.fail(fmt.Errorf("librdkafka: %s: %s", f[1], strings.Join(f[2:], " ")))
		case len(f) == 2 && f[0] == "done":
			return f[1] == "0"
		default:
			w.t.Errorf("rdkafka_produce.py: unexpected line %q", sc.Text())
		}
	}
	return false
}

// endGaps ends the ack-gap measurement: the producer stops producing now.
func (w *workload) endGaps() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gaps.end(time.Now())
}

// ackedCount is how many records were acknowledged so far.
func (w *workload) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// progress waits until n more records are acknowledged.
func (w *workload) progress(n int, within time.Duration) {
	w.t.Helper()
	start := w.ackedCount()
	poll(w.t, within, fmt.Sprintf("%d more acknowledged records", n), func() bool { return w.ackedCount() >= start+n })
}

// progressEach waits until every partition has an acknowledgement received after
// since, so that no partition's gap is cut short by the end of the run.
func (w *workload) progressEach(since time.Time, within time.Duration) {
	w.t.Helper()
	poll(w.t, within, "an acknowledged record on every partition after "+w.since(since), func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, last := range w.gaps.last {
			if !last.After(since) {
				return false
			}
		}
		return true
	})
}

// workloadResult is what a finished workload's history showed.
type workloadResult struct {
	acked, failed int
	resent        int // second copies of librdkafka's epoch bumps (see finish)
	// longest is the longest time a partition went without an acknowledged record.
	longest ackGap
}

// finish stops the workload and checks the history against the final log: every
// acknowledged record is there exactly once, at its offset, in produce order, and
// every consumed record is still there. It logs the longest ack gap of each partition.
//
// One exception, for librdkafka only: a record may be there twice when the second
// copy carries a higher producer epoch. librdkafka's idempotent producer can send the
// next batch of a partition before retrying one refused with NOT_LEADER_OR_FOLLOWER
// across a leader change, gets OUT_OF_ORDER_SEQUENCE_NUMBER, bumps its epoch and sends
// again what was not acknowledged, which no broker can tell from new records
// (librdkafka issue 4953, seen with Kafka too). Such copies are counted and logged.
func (w *workload) finish(addr string) workloadResult {
	w.t.Helper()
	w.stop()
	w.done.Wait()
	final, batches := readLog(w.t, addr)
	w.mu.Lock()
	defer w.mu.Unlock()
	resent := 0 // second copies of librdkafka's epoch bumps
	check := func() error {
		at := make(map[int32]map[int64]string)
		copies := make(map[string][]record) // in log order
		for _, r := range final {
			if at[r.partition] == nil {
				at[r.partition] = make(map[int64]string)
			}
			at[r.partition][r.offset] = r.value
			if prev := copies[r.value]; len(prev) > 0 {
				first := prev[0]
				if !w.librdkafka || batches[r].producerEpoch <= batches[first].producerEpoch {
					return fmt.Errorf("%s is in the log twice: partition %d offset %d (%s) and partition %d offset %d (%s)",
						r.value, first.partition, first.offset, batches[first], r.partition, r.offset, batches[r])
				}
				resent++
			}
			copies[r.value] = append(copies[r.value], r)
		}
		for _, a := range w.acked {
			cs := copies[a.value]
			if len(cs) == 0 {
				return fmt.Errorf("acknowledged record %s (partition %d offset %d) is lost", a.value, a.partition, a.offset)
			}
			if !slices.ContainsFunc(cs, func(c record) bool {
				return c.partition == a.partition && (a.offset < 0 || c.offset == a.offset) // -1: librdkafka did not say
			}) {
				return fmt.Errorf("acknowledged record %s at partition %d offset %d is now at partition %d offset %d", a.value, a.partition, a.offset, cs[0].partition, cs[0].offset)
			}
		}
		for _, c := range w.consumed {
			if at[c.partition][c.offset] != c.value {
				return fmt.Errorf("consumed %s at partition %d offset %d, but the log now has %q there: a consumer saw a record that was lost", c.value, c.partition, c.offset, at[c.partition][c.offset])
			}
		}
		// Produce order per partition: one producer, so its values grow with offsets
		// (records of the tests' own probes, not starting with "v", and resent copies
		// are left out).
		last := make(map[int32]string)
		for _, r := range final {
			if !strings.HasPrefix(r.value, "v") || copies[r.value][0] != r {
				continue
			}
			if r.value <= last[r.partition] {
				return fmt.Errorf("partition %d: %s at offset %d after %s", r.partition, r.value, r.offset, last[r.partition])
			}
			last[r.partition] = r.value
		}
		return nil
	}
	if err := check(); err != nil {
		w.t.Fatal(err)
	}
	if resent > 0 {
		w.t.Logf("%d records are in the log twice, the second copy sent again by librdkafka under a new producer epoch", resent)
	}
	res := workloadResult{acked: len(w.acked), failed: w.failed, resent: resent, longest: w.gaps.longest()}
	w.t.Logf("history ok: %d acknowledged, %d failed (never acknowledged), %d consumed during the run, %d in the log; longest ack gap %v (%s)",
		len(w.acked), w.failed, len(w.consumed), len(final), res.longest.d.Round(time.Millisecond), w.gaps)
	return res
}

// batchOf is what a record's batch says of it.
type batchOf struct {
	producerID    int64
	producerEpoch int16
	leaderEpoch   int32
}

func (b batchOf) String() string {
	return fmt.Sprintf("producer %d epoch %d, leader epoch %d", b.producerID, b.producerEpoch, b.leaderEpoch)
}

// readLog reads the whole topic from a fresh client, sorted by partition and offset,
// with what the batch of each record says of it.
func readLog(t *testing.T, addr string) ([]record, map[record]batchOf) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, addr))
	want := endOffsets(t, ctx, adm, faultTopic)
	cl := newClient(t, addr, kgo.ConsumeTopics(faultTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []record
	batches := make(map[record]batchOf)
	got := make(map[int32]int64)
	done := func() bool {
		for p, end := range want {
			if got[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the log: have %v, want %v", got, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			rec := record{r.Partition, r.Offset, string(r.Value)}
			out = append(out, rec)
			batches[rec] = batchOf{r.ProducerID, r.ProducerEpoch, r.LeaderEpoch}
			got[r.Partition] = r.Offset + 1
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].partition != out[j].partition {
			return out[i].partition < out[j].partition
		}
		return out[i].offset < out[j].offset
	})
	return out, batches
}
