package bench

// skiff bench compact: the log cleaner's throughput, and what it costs
// producers, each beside its baseline in the same run (docs/performance.md).
//
//  1. Two compacted topics, <T>-a and <T>-b (one partition each), are filled
//     with Keys keys overwritten Overwrites times, every record stamped with
//     one time t0, so that segment.ms (1 h) and segment.bytes (2 GiB) keep the
//     whole fill in the active segment, which the cleaner never touches.
//  2. A record stamped t0 + 2 h rolls <T>-a: its fill becomes one sealed segment,
//     which the cleaner compacts in one pass; the broker's metrics say how long
//     that pass took (skiff_log_cleaner_seconds_total) and what it read and wrote.
//     Beside it: reading a file of the segment's size and writing a copy of it
//     (fdatasync at the end, as the cleaner does), in Dir.
//  3. Rounds rounds (compact_load.go), each on a fresh fill (<T>-b, <T>-b2, ...):
//     the same roll, with a produce load on <T>-load running until its pass
//     ends, and the same load about as long without cleaning, in alternating
//     order. The median ratio of their throughputs is what the cleaner costs
//     producers; the broker's and the machine's CPU in each window say whether
//     it costs them CPU or I/O.
//  4. <T>-a is read from offset 0: it must hold the final value of every key.
//
// The cleaner picks a log up within log-cleaner-backoff (15 s by default); run
// the broker with --log-cleaner-backoff 100ms so that step 3's load overlaps the
// cleaning (the report says by how much).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/client"
)

// CompactConfig is one skiff bench compact run.
type CompactConfig struct {
	// Load holds the topic prefix (Topic), the record size, producers, acks,
	// compression and linger of the fill and of the produce load, the replication
	// factor, the load topic's partitions and Configs, Dir, JSON and the Client.
	Load       Config
	Keys       int
	Overwrites int
	Rounds     int // of step 3
	// HTTP is the address of the /metrics of the broker leading the topics.
	HTTP string
}

// CompactResult is what skiff bench compact prints; its JSON field names must
// not change.
type CompactResult struct {
	Keys          int     `json:"keys"`
	Overwrites    int     `json:"overwrites"`
	RecordSize    int     `json:"record_size"`
	Security      string  `json:"security"` // the clients' security.protocol (and SASL mechanism)
	Records       int64   `json:"records"`
	SegmentBytes  int64   `json:"segment_bytes"`    // the sealed fill, on disk
	CleanSeconds  float64 `json:"clean_seconds"`    // the pass alone
	CleanRead     int64   `json:"clean_read"`       // bytes the pass read
	CleanWritten  int64   `json:"clean_written"`    // bytes the pass wrote
	CleanMBPerSec float64 `json:"clean_mb_per_sec"` // segment bytes / clean seconds
	// ReadWriteSeconds reads a file of SegmentBytes and writes a copy (fdatasync
	// at the end); CleanRatio = ReadWriteSeconds / CleanSeconds (target >= 0.3).
	ReadWriteSeconds  float64 `json:"read_write_seconds"`
	ReadWriteMBPerSec float64 `json:"read_write_mb_per_sec"`
	CleanRatio        float64 `json:"clean_ratio"`
	// The produce load alone and while the cleaner runs, medians over Rounds,
	// and the median of the rounds' ratios (target >= 0.8) with the lowest and
	// highest; LoadSeconds is the loaded windows together, CleanBusySeconds how
	// long the passes took within them.
	ProduceAloneMBPerSec    float64        `json:"produce_alone_mb_per_sec"`
	ProduceCleaningMBPerSec float64        `json:"produce_cleaning_mb_per_sec"`
	ProduceRatio            float64        `json:"produce_ratio"`
	ProduceRatioMin         float64        `json:"produce_ratio_min"`
	ProduceRatioMax         float64        `json:"produce_ratio_max"`
	LoadSeconds             float64        `json:"load_seconds"`
	CleanBusySeconds        float64        `json:"clean_busy_seconds"`
	Rounds                  []CompactRound `json:"rounds"`
	// KeysRead is what a consumer of <T>-a from offset 0 found: every key at its
	// final value.
	KeysRead    int64 `json:"keys_read"`
	RecordsRead int64 `json:"records_read"`
}

// RunCompact runs the compaction benchmark and prints its result to out.
func RunCompact(ctx context.Context, cfg CompactConfig, out io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	lc := cfg.Load
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	res := &CompactResult{Keys: cfg.Keys, Overwrites: cfg.Overwrites, RecordSize: lc.RecordSize, Security: lc.Client.Protocol()}
	a := lc.Topic + "-a"
	var err error
	if res.Records, err = fillCompacted(ctx, lc, a, cfg.Keys, cfg.Overwrites, t0); err != nil {
		return err
	}

	// 2. One pass alone.
	before, err := scrapeCleaner(ctx, cfg.HTTP)
	if err != nil {
		return err
	}
	if err := rollTopic(ctx, lc, a, t0); err != nil {
		return err
	}
	after, err := waitPass(ctx, cfg.HTTP, before, lc.Client.Timeout, &res.SegmentBytes)
	if err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	res.CleanSeconds = after.seconds - before.seconds
	res.CleanRead, res.CleanWritten = int64(after.read-before.read), int64(after.written-before.written)
	if res.CleanSeconds > 0 {
		res.CleanMBPerSec = float64(res.SegmentBytes) / mb / res.CleanSeconds
	}
	syncFilesystems()
	rw, err := readWriteBaseline(lc.Dir, res.SegmentBytes)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	res.ReadWriteSeconds = rw.Seconds()
	if rw > 0 {
		res.ReadWriteMBPerSec = float64(res.SegmentBytes) / mb / rw.Seconds()
	}
	if res.CleanSeconds > 0 {
		res.CleanRatio = res.ReadWriteSeconds / res.CleanSeconds
	}

	// 3. The produce load while the cleaner runs and without, in rounds.
	if err := produceRounds(ctx, cfg, res); err != nil {
		return err
	}

	// 4. What a consumer of <T>-a reads.
	if res.KeysRead, res.RecordsRead, err = checkFinalKeys(ctx, lc, a, cfg.Keys, cfg.Overwrites); err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if lc.JSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	return res.writeText(out)
}

func ptr(s string) *string { return &s }

// fillCompacted creates topic, compacted with one partition whose fill stays in
// one segment, and fills it (fillKeys); it returns the records acknowledged.
func fillCompacted(ctx context.Context, lc Config, topic string, keys, overwrites int, t0 time.Time) (int64, error) {
	admin, err := client.New(lc.Client)
	if err != nil {
		return 0, err
	}
	defer admin.Close()
	// The roll record is stamped 2 h ahead: message.timestamp.after.max.ms (1 h
	// by default) must let it in.
	tc := lc
	tc.Topic, tc.Partitions = topic, 1
	tc.Configs = map[string]*string{"cleanup.policy": ptr("compact"), "segment.ms": ptr("3600000"),
		"segment.bytes": ptr("2147483647"), "message.timestamp.after.max.ms": ptr("9223372036854775807")}
	if _, _, err := ensureTopic(ctx, admin, tc); err != nil {
		return 0, err
	}
	n, err := fillKeys(ctx, lc, topic, keys, overwrites, t0)
	if err != nil {
		return 0, fmt.Errorf("fill %s: %w", topic, err)
	}
	return n, nil
}

func (r *CompactResult) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "compact  %d keys x %d overwrites of %d-byte values: %d records, one sealed segment of %.1f MB\n",
		r.Keys, r.Overwrites, r.RecordSize, r.Records, float64(r.SegmentBytes)/mb)
	if r.Security != "" {
		fmt.Fprintf(&b, "security      %s\n", r.Security)
	}
	fmt.Fprintf(&b, "cleaning      one pass in %.2f s: %.1f MB/s of log (read %.1f MB, wrote %.1f MB)\n",
		r.CleanSeconds, r.CleanMBPerSec, float64(r.CleanRead)/mb, float64(r.CleanWritten)/mb)
	fmt.Fprintf(&b, "baseline      read + write of the same bytes (fdatasync at the end) in %.2f s: %.1f MB/s   ratio %.3f (target >= 0.3)\n",
		r.ReadWriteSeconds, r.ReadWriteMBPerSec, r.CleanRatio)
	for i, rd := range r.Rounds {
		fmt.Fprintf(&b, "round %-7d %.1f MB/s alone in %.1f s, %.1f MB/s in %.1f s while the pass over %s took %.1f s   ratio %.3f\n",
			i+1, rd.AloneMBPerSec, rd.AloneSeconds, rd.CleaningMBPerSec, rd.LoadSeconds, rd.Topic, rd.CleanBusySeconds, rd.Ratio)
		fmt.Fprintf(&b, "              CPU cores alone / cleaning: broker %.2f / %.2f, bench %.2f / %.2f, machine busy %.2f / %.2f, iowait %.2f / %.2f\n",
			rd.AloneCPU.Broker, rd.CleaningCPU.Broker, rd.AloneCPU.Client, rd.CleaningCPU.Client,
			rd.AloneCPU.MachineBusy, rd.CleaningCPU.MachineBusy, rd.AloneCPU.MachineIOWait, rd.CleaningCPU.MachineIOWait)
	}
	fmt.Fprintf(&b, "produce       on another topic: %.1f MB/s alone, %.1f MB/s while the cleaner runs (medians)   ratio %.3f [%.3f-%.3f] over %d rounds (target >= 0.8)\n",
		r.ProduceAloneMBPerSec, r.ProduceCleaningMBPerSec, r.ProduceRatio, r.ProduceRatioMin, r.ProduceRatioMax, len(r.Rounds))
	fmt.Fprintf(&b, "              the passes took %.2f s of the %.2f s loaded windows\n", r.CleanBusySeconds, r.LoadSeconds)
	fmt.Fprintf(&b, "check         %d records read from offset 0: each of the %d keys at its final value\n", r.RecordsRead, r.KeysRead)
	_, err := io.WriteString(w, b.String())
	return err
}

// compactValue is the value of key k in round r: the round first, for the check.
func compactValue(buf []byte, round, size int) []byte {
	buf = strconv.AppendInt(buf[:0], int64(round), 10)
	buf = append(buf, ':')
	for len(buf) < size {
		buf = append(buf, 'a'+byte(len(buf)*7%26))
	}
	return buf
}

func compactKey(k int) []byte { return fmt.Appendf(nil, "key-%09d", k) }

// fillKeys writes keys keys overwrites times over to topic, all stamped t0, and
// returns how many records were acknowledged.
func fillKeys(ctx context.Context, lc Config, topic string, keys, overwrites int, t0 time.Time) (int64, error) {
	lc.Topic = topic
	// franz-go times a record's delivery from its timestamp: t0 is in the past.
	k, err := client.New(lc.Client, append(lc.producerOpts(0), kgo.MaxBufferedRecords(1<<16),
		kgo.RecordDeliveryTimeout(lc.DeliveryTimeout+time.Since(t0)))...)
	if err != nil {
		return 0, err
	}
	defer k.Close()
	var acked loadCounters
	for round := range overwrites {
		for key := range keys {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			r := &kgo.Record{Key: compactKey(key), Value: compactValue(nil, round, lc.RecordSize), Timestamp: t0}
			k.Kafka().Produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					acked.fail(err)
					return
				}
				acked.records.Add(1)
			})
		}
	}
	if err := k.Kafka().Flush(ctx); err != nil {
		return 0, err
	}
	if err := acked.firstErr(); err != nil {
		return 0, k.Explain(err)
	}
	return acked.records.Load(), nil
}

// rollTopic produces one record stamped 2 h after t0, which rolls the active
// segment (segment.ms 1 h) and so seals the fill.
func rollTopic(ctx context.Context, lc Config, topic string, t0 time.Time) error {
	k, err := client.New(lc.Client, kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer k.Close()
	pctx, cancel := k.RequestCtx(ctx)
	defer cancel()
	r := &kgo.Record{Key: []byte("roll"), Value: []byte("roll"), Timestamp: t0.Add(2 * time.Hour)}
	if err := k.Kafka().ProduceSync(pctx, r).FirstErr(); err != nil {
		return fmt.Errorf("roll %s: %w", topic, k.Explain(err))
	}
	return nil
}

// cleanerMetrics are the broker's cleaner series.
type cleanerMetrics struct {
	passes, seconds, read, written, uncleaned float64
	cpu                                       float64 // the broker's process_cpu_seconds_total (0: none)
}

// scrapeCleaner reads the cleaner's series from a broker's /metrics.
func scrapeCleaner(ctx context.Context, addr string) (cleanerMetrics, error) {
	var m cleanerMetrics
	want := map[string]*float64{
		"skiff_log_cleaner_passes_total": &m.passes, "skiff_log_cleaner_seconds_total": &m.seconds,
		"skiff_log_cleaner_read_bytes_total": &m.read, "skiff_log_cleaner_written_bytes_total": &m.written,
		"skiff_log_cleaner_uncleaned_bytes": &m.uncleaned,
	}
	names := []string{"process_cpu_seconds_total"} // not on every platform
	for name := range want {
		names = append(names, name)
	}
	series, err := scrapeMetrics(ctx, addr, names...)
	if err != nil {
		return m, err
	}
	m.cpu = series["process_cpu_seconds_total"]
	for name, p := range want {
		v, ok := series[name]
		if !ok {
			return m, fmt.Errorf("broker metrics at %s have no log cleaner series: is it a Skiff broker's --http address?", addr)
		}
		*p = v
	}
	return m, nil
}

// waitPass waits until the broker has seen a sealed dirty segment (noting the
// largest uncleaned size in *size) and then completed a pass that left nothing
// uncleaned; timeout bounds each wait without progress.
func waitPass(ctx context.Context, addr string, before cleanerMetrics, timeout time.Duration, size *int64) (cleanerMetrics, error) {
	var m cleanerMetrics
	var err error
	deadline := time.Now().Add(timeout + 2*time.Minute) // the cleaner's backoff, then the pass
	for {
		if m, err = scrapeCleaner(ctx, addr); err != nil {
			return m, err
		}
		*size = max(*size, int64(m.uncleaned))
		if *size > 0 && m.passes > before.passes && m.uncleaned == 0 {
			return m, nil
		}
		if time.Now().After(deadline) {
			return m, errors.New("the log cleaner did not compact it in time (is the topic compacted, and --http the address of the broker leading it?)")
		}
		select {
		case <-ctx.Done():
			return m, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// readWriteBaseline reads a file of n bytes (written first, and in the page
// cache, as a freshly written segment is) and writes a copy of it in 1 MiB
// chunks with fdatasync at the end: the I/O of a cleaner that kept everything.
func readWriteBaseline(dir string, n int64) (time.Duration, error) {
	buf := make([]byte, BaselineChunk)
	for i := range buf {
		buf[i] = 'a' + byte(i*7+i/13)%26
	}
	src, err := os.CreateTemp(dir, ".skiff-bench-*.tmp")
	if err != nil {
		return 0, err
	}
	defer os.Remove(src.Name())
	defer src.Close()
	if _, _, err := writeFile(src, buf, n, false); err != nil {
		return 0, err
	}
	dst, err := os.CreateTemp(dir, ".skiff-bench-*.tmp")
	if err != nil {
		return 0, err
	}
	defer os.Remove(dst.Name())
	defer dst.Close()
	start := time.Now()
	var off int64
	for off < n {
		m, err := src.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		if err != nil && !(errors.Is(err, io.EOF) && m > 0) {
			return 0, err
		}
		if _, err := dst.WriteAt(buf[:m], off); err != nil {
			return 0, err
		}
		off += int64(m)
	}
	if err := fdatasync(dst); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// checkFinalKeys reads topic from offset 0 up to the roll record and checks that
// every key ends at its final round; it returns the keys and records read.
func checkFinalKeys(ctx context.Context, lc Config, topic string, keys, overwrites int) (int64, int64, error) {
	k, err := client.New(lc.Client, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, 0, err
	}
	defer k.Close()
	last := make(map[string]int, keys)
	var records int64
	for {
		fctx, cancel := k.RequestCtx(ctx)
		fs := k.Kafka().PollFetches(fctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		if err := fs.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return 0, 0, k.Explain(err)
		}
		if fs.Empty() {
			return 0, 0, fmt.Errorf("no roll record after %d records", records)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if done || string(r.Key) == "roll" {
				done = true
				return
			}
			records++
			round, _, _ := strings.Cut(string(r.Value), ":")
			last[string(r.Key)], _ = strconv.Atoi(round)
		})
		if done {
			break
		}
	}
	for key := range keys {
		if r, ok := last[string(compactKey(key))]; !ok || r != overwrites-1 {
			return 0, 0, fmt.Errorf("key %s ends at round %d (read: %v), want %d", compactKey(key), r, ok, overwrites-1)
		}
	}
	return int64(len(last)), records, nil
}
