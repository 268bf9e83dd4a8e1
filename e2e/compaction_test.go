package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// compactArgs make a node's log cleaner look for work every 100 ms.
var compactArgs = []string{"--log-cleaner-backoff", "100ms"}

// metric returns the value of the unlabelled series name of a node's /metrics.
func metric(t *testing.T, n *testnode.Node, name string) float64 {
	t.Helper()
	hc := http.DefaultClient
	if labDial != nil { // the node is in a network lab
		hc = &http.Client{Transport: &http.Transport{DialContext: labDial}}
	}
	resp, err := hc.Get("http://" + n.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

// kv is a record as written and read: key, value (nil: a tombstone) and offset.
type kv struct {
	key    string
	value  *string
	offset int64
}

func (r kv) String() string {
	v := "NULL"
	if r.value != nil {
		v = *r.value
	}
	return fmt.Sprintf("%d %s %s", r.offset, r.key, v)
}

// compactedHistory is what was produced to one partition of a compacted topic.
type compactedHistory struct {
	at    map[int64]kv
	final map[string]kv
}

// produceOverwrites writes keys key-000.. rounds times over, round by round, each
// round with the next client of cls (so with several, their codecs mix in one
// partition); in the last round every seventh key gets a tombstone. Timestamps
// start at ts0 and grow by 100 ms a record, so that segment.ms rolls segments.
func produceOverwrites(t *testing.T, cls []*kgo.Client, topic string, keys, rounds int, ts0 time.Time) compactedHistory {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := compactedHistory{at: map[int64]kv{}, final: map[string]kv{}}
	ts := ts0
	for round := range rounds {
		var recs []*kgo.Record
		for k := range keys {
			r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "key-%03d", k), Timestamp: ts,
				Value: fmt.Appendf(nil, "v%d-%s", round, strings.Repeat("x", (k*7+round)%50))}
			if round == rounds-1 && k%7 == 0 {
				r.Value = nil
			}
			recs = append(recs, r)
			ts = ts.Add(100 * time.Millisecond)
		}
		if err := cls[round%len(cls)].ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			w := kv{key: string(r.Key), offset: r.Offset}
			if r.Value != nil {
				v := string(r.Value)
				w.value = &v
			}
			h.at[r.Offset] = w
			h.final[w.key] = w
		}
	}
	return h
}

// readCompacted reads partition 0 of topic from its start with franz-go until a
// sentinel record produced for the purpose, and returns what it read before it.
func readCompacted(t *testing.T, addr, topic string) []kv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := newClient(t, addr)
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("sentinel"), Value: []byte("end")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []kv
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: no sentinel after %d records", topic, len(out))
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if done {
				return
			}
			if string(r.Key) == "sentinel" && string(r.Value) == "end" {
				done = true
				return
			}
			w := kv{key: string(r.Key), offset: r.Offset}
			if r.Value != nil {
				v := string(r.Value)
				w.value = &v
			}
			out = append(out, w)
		})
		if done {
			return out
		}
	}
}

// checkFinal verifies what a consumer from offset 0 read against what was
// produced: every record is the one produced at its offset, offsets only grow,
// the last record of each key is its final one (a deleted key may be absent,
// and must be once tombstonesGone); and it returns how many tombstones it read.
func checkFinal(t *testing.T, topic string, got []kv, h compactedHistory, tombstonesGone bool) int {
	t.Helper()
	last := map[string]kv{}
	prev := int64(-1)
	tombs := 0
	for _, g := range got {
		if g.offset <= prev {
			t.Fatalf("%s: offset %d after %d", topic, g.offset, prev)
		}
		prev = g.offset
		if p, ok := h.at[g.offset]; !ok || p.String() != g.String() {
			t.Fatalf("%s: read %v, produced %v there", topic, g, p)
		}
		if g.value == nil {
			tombs++
		}
		last[g.key] = g
	}
	for k, f := range h.final {
		g, ok := last[k]
		switch {
		case f.value == nil && !ok:
		case f.value == nil && tombstonesGone:
			t.Fatalf("%s: key %s: its tombstone is still read", topic, k)
		case !ok || g.offset != f.offset:
			t.Fatalf("%s: key %s ends at %v, want the final record %v", topic, k, g, f)
		}
	}
	return tombs
}

// kcatRead reads partition 0 of topic from its start to its end with kcat
// (librdkafka), up to the first sentinel record (readCompacted's).
func kcatRead(t *testing.T, addr, topic string) []kv {
	t.Helper()
	out := runKcat(t, nil, "-b", addr, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-Z", "-f", "%o %k %s\n")
	var got []kv
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 {
			t.Fatalf("kcat printed %q", line)
		}
		if f[1] == "sentinel" {
			return got
		}
		off, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("kcat printed %q", line)
		}
		r := kv{key: f[1], offset: off}
		if f[2] != "NULL" {
			r.value = &f[2]
		}
		got = append(got, r)
	}
	t.Fatalf("kcat read no sentinel from %s", topic)
	return nil
}

// TestCompactedTopicClients: compacted topics with each codec, and with all of
// them mixed in one partition, written 10 times over by franz-go producers: once
// the cleaner has compacted them, a franz-go consumer and kcat (librdkafka)
// reading from offset 0 across the gaps both see the same records, the final
// value of every key, offsets only growing; tombstones go after
// delete.retention.ms; and a topic whose records are younger than
// min.compaction.lag.ms keeps them all.
func TestCompactedTopicClients(t *testing.T) {
	n := testnode.Start(t, compactArgs...)
	const keys, rounds = 60, 10
	ts0 := time.Now().Add(-time.Hour)
	codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	clientFor := func(c kgo.CompressionCodec) *kgo.Client {
		return newClient(t, n.Addr, kgo.ProducerBatchCompression(c), kgo.ProducerLinger(time.Millisecond))
	}
	configs := map[string]string{"cleanup.policy": "compact", "segment.ms": "1000",
		"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "3000"}
	hist := map[string]compactedHistory{}
	for name, c := range codecs {
		topic := "compact-" + name
		createTopicWith(t, n.Addr, topic, 1, 1, configs)
		hist[topic] = produceOverwrites(t, []*kgo.Client{clientFor(c)}, topic, keys, rounds, ts0)
	}
	createTopicWith(t, n.Addr, "compact-mixed", 1, 1, configs)
	var mixed []*kgo.Client
	for _, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		mixed = append(mixed, clientFor(codecs[name]))
	}
	hist["compact-mixed"] = produceOverwrites(t, mixed, "compact-mixed", keys, rounds, ts0)
	lagConfigs := map[string]string{"cleanup.policy": "compact", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01",
		"min.compaction.lag.ms": "3600000"}
	createTopicWith(t, n.Addr, "compact-lag", 1, 1, lagConfigs)
	lag := produceOverwrites(t, []*kgo.Client{clientFor(kgo.NoCompression())}, "compact-lag", keys, rounds, time.Now())

	poll(t, time.Minute, "the cleaner to compact every topic", func() bool {
		return metric(t, n, "skiff_log_cleaner_passes_total") >= float64(len(hist)) &&
			metric(t, n, "skiff_log_cleaner_uncleaned_bytes") == 0
	})
	for topic, h := range hist {
		got := readCompacted(t, n.Addr, topic)
		tombs := checkFinal(t, topic, got, h, false)
		if len(got) >= keys*rounds/3 {
			t.Fatalf("%s: %d of %d records left: not compacted", topic, len(got), keys*rounds)
		}
		// kcat (librdkafka) reads across the gaps too, to the end (the cleaner may
		// have compacted more in between: the same rules hold).
		kc := kcatRead(t, n.Addr, topic)
		checkFinal(t, topic+" (kcat)", kc, h, false)
		t.Logf("%s: %d of %d records left, %d tombstones", topic, len(got), keys*rounds, tombs)
	}
	if got := readCompacted(t, n.Addr, "compact-lag"); len(got) != keys*rounds {
		t.Fatalf("compact-lag: %d of %d records left: records younger than min.compaction.lag.ms were compacted", len(got), keys*rounds)
	} else {
		checkFinal(t, "compact-lag", got, lag, false)
	}

	// delete.retention.ms (3 s) after the pass that kept them, the tombstones go:
	// the cleaner compacts again by itself when their horizon passes.
	for topic, h := range hist {
		poll(t, 30*time.Second, topic+" to lose its tombstones", func() bool {
			for _, g := range readCompacted(t, n.Addr, topic) {
				if g.value == nil {
					return false
				}
			}
			return true
		})
		checkFinal(t, topic, readCompacted(t, n.Addr, topic), h, true)
	}
}
