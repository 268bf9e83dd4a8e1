package replication

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/crashfs"
	"skiff/internal/syncbuf"
	"skiff/logstore"
	"skiff/offsets"
)

// crashNode is one "process" of a single-node broker on a crash-test filesystem:
// Pebble in /data/meta, the partitions in /data/topics, sharing the filesystem.
type crashNode struct {
	db *offsets.DB
	m  *Manager
}

// alwaysSpec is topic t, one partition led here, under flush.policy=always with
// small segments (rolls happen in every run) and a dense index.
func alwaysSpec() TopicSpec {
	t := spec("t", 1, 1)
	t.Config.Flush = FlushAlways
	t.Config.Log = logstore.Config{SegmentBytes: 4 << 10, IndexIntervalBytes: 512, RetentionMs: -1}
	return t
}

func startCrashNode(t *testing.T, fs vfs.FS, ts TopicSpec) *crashNode {
	t.Helper()
	db, err := offsets.Open("/data/meta", offsets.Options{FS: fs, CacheBytes: 1 << 20, MemTableBytes: 1 << 20})
	if err != nil {
		t.Fatalf("open Pebble: %v", err)
	}
	m, err := NewManager(Config{Dir: "/data/topics", FS: fs, Store: func(key string) Store { return db.LogIndex(key) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(1, []TopicSpec{ts}); err != nil {
		t.Fatal(err)
	}
	if m.Partition("t", 0) == nil {
		t.Fatalf("partition not opened: %v", m.Offline("t", 0))
	}
	return &crashNode{db: db, m: m}
}

func (n *crashNode) close(t *testing.T) {
	t.Helper()
	if err := n.m.Close(); err != nil && !errors.Is(err, syscall.EIO) {
		t.Errorf("close manager: %v", err)
	}
	if err := n.db.Close(); err != nil {
		t.Errorf("close Pebble: %v", err)
	}
}

// newCrashFS is a filesystem with the data directory in place (durably), as a
// node finds it after installation.
func newCrashFS(t *testing.T, seed uint64) *crashfs.FS {
	t.Helper()
	fs, err := crashfs.NewWithDir(seed, "/data")
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// crashRun is one crash test iteration's record of what happened.
type crashRun struct {
	mu       sync.Mutex
	appended map[int64][]byte // every batch appended, by base offset, as stored
	acked    map[int64][]byte // the batches acknowledged to their producer
	atCrash  map[int64][]byte // acked as of the crash point
	ackErrs  int              // acknowledgements refused (storage errors)
}

// produce runs producers goroutines appending batches to p with acks=1 or -1,
// waiting for each to be acknowledged as the produce path does.
func (r *crashRun) produce(p *Partition, seed uint64, producers, batches int) {
	var wg sync.WaitGroup
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			acks := int16(1)
			if g%2 == 1 {
				acks = -1
			}
			for i := range batches {
				vals := make([]string, 1+rng.IntN(4))
				for j := range vals {
					vals[j] = fmt.Sprintf("g%d-b%d-r%d-%s", g, i, j, strings.Repeat("x", rng.IntN(300)))
				}
				b := batchtest.Strings(batchtest.Plain, int64(1000*i+g), vals...)
				res, err := p.Append(b, acks)
				if err != nil {
					continue // refused (an injected disk error): not in the log
				}
				r.mu.Lock()
				r.appended[res.BaseOffset] = b // Append rewrote base offset and epoch in place
				r.mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = p.WaitAcked(ctx, res.LeaderEpoch, res.LastOffset, acks)
				cancel()
				r.mu.Lock()
				if err == nil {
					r.acked[res.BaseOffset] = b
				} else {
					r.ackErrs++
				}
				r.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// check reopens the partition of a restarted node and verifies that every batch
// acknowledged before the crash is readable with identical bytes, and that the
// log from its start to its end is a gapless run of batches that were appended,
// byte for byte: nothing lost, nothing torn, no garbage.
func (r *crashRun) check(t *testing.T, p *Partition, acked map[int64][]byte) {
	t.Helper()
	for base, want := range acked {
		s, err := p.Read(base, 1)
		if err != nil {
			t.Fatalf("acknowledged batch at %d not readable: %v (log end %d, hw %d)", base, err, p.LogEndOffset(), p.HighWatermark())
		}
		var got bytes.Buffer
		if _, err := s.WriteTo(&got); err != nil {
			t.Fatal(err)
		}
		s.Release()
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("acknowledged batch at %d: read %d bytes that differ from the %d acknowledged", base, got.Len(), len(want))
		}
	}
	if p.HighWatermark() != p.LogEndOffset() {
		t.Fatalf("high watermark %d, log end %d after recovery", p.HighWatermark(), p.LogEndOffset())
	}
	s, err := p.Read(0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	if _, err := s.WriteTo(&all); err != nil {
		t.Fatal(err)
	}
	s.Release()
	next := int64(0)
	if err := batch.Split(all.Bytes(), func(h batch.Header, b []byte) error {
		if h.BaseOffset != next {
			return fmt.Errorf("batch at offset %d, want %d: a gap", h.BaseOffset, next)
		}
		if want, ok := r.appended[h.BaseOffset]; !ok || !bytes.Equal(b, want) {
			return fmt.Errorf("batch at offset %d is not one that was appended (known %v)", h.BaseOffset, ok)
		}
		next = h.NextOffset()
		return nil
	}); err != nil {
		t.Fatalf("log after recovery: %v", err)
	}
	if next != p.LogEndOffset() {
		t.Fatalf("batches end at %d, log end %d", next, p.LogEndOffset())
	}
}

var crashIterations = flag.Int("crash-iterations", 300, "iterations of TestCrashLoopFlushAlways (more for a soak run)")

// TestCrashLoopFlushAlways is the crash test of flush.policy=always on one node:
// each iteration runs concurrent producers (acks=1 and acks=all) against a
// partition whose log and Pebble share a crash-test filesystem, captures the disk
// as a power failure at a random write or sync would leave it (unsynced data
// dropped, some of it kept block by block, the write at that point torn at a
// random byte), restarts the node on that image and checks that every batch
// acknowledged before the crash is readable with identical bytes and that the
// log has no gap or garbage. A third of the iterations also fail a random
// segment write (ENOSPC) or fdatasync (EIO) before the crash: nothing refused may
// be acknowledged, and a failed fdatasync is never reported as a success.
func TestCrashLoopFlushAlways(t *testing.T) {
	iterations := *crashIterations
	if testing.Short() {
		iterations = min(iterations, 60)
	}
	// The operations of a whole run without a crash point, to draw crash points from.
	probe := newCrashFS(t, 0)
	n := startCrashNode(t, probe, alwaysSpec())
	before := probe.Ops()
	(&crashRun{appended: map[int64][]byte{}, acked: map[int64][]byte{}}).produce(n.m.Partition("t", 0), 0, 3, 15)
	ops := probe.Ops() - before
	n.close(t)

	start := time.Now()
	var crashed, injected, ackedTotal, refused int
	for it := range iterations {
		seed := uint64(it + 1)
		rng := rand.New(rand.NewPCG(seed, 99))
		fs := newCrashFS(t, seed)
		n := startCrashNode(t, fs, alwaysSpec())
		r := &crashRun{appended: map[int64][]byte{}, acked: map[int64][]byte{}}
		if it%3 == 2 {
			injected++
			fs.SetInjector(oneSegmentFailure(rng, ops))
		}
		fs.CrashAt(1+rng.IntN(ops), func() {
			r.mu.Lock()
			r.atCrash = maps.Clone(r.acked)
			r.mu.Unlock()
		})
		r.produce(n.m.Partition("t", 0), seed, 3, 15)
		n.close(t)
		acked := r.atCrash
		if fs.Crashed() {
			crashed++
		} else {
			acked = r.acked // the image is taken now, after every acknowledgement
		}
		ackedTotal += len(acked)
		refused += r.ackErrs

		n2 := startCrashNode(t, fs.Restart(), alwaysSpec())
		t.Run("", func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("iteration %d (seed %d): %d appended, %d acknowledged before the crash", it, seed, len(r.appended), len(acked))
				}
			}()
			r.check(t, n2.m.Partition("t", 0), acked)
		})
		n2.close(t)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d iterations (%d crashed mid-run, %d with an injected disk error; %d batches acknowledged before their crash, %d acknowledgements refused) in %v; %d operations per run",
		iterations, crashed, injected, ackedTotal, refused, time.Since(start).Round(time.Millisecond), ops)
	if crashed < iterations/2 {
		t.Fatalf("only %d of %d iterations reached their crash point", crashed, iterations)
	}
}

// oneSegmentFailure fails one random write (ENOSPC) or fdatasync (EIO) of a
// segment file: the k-th such operation.
func oneSegmentFailure(rng *rand.Rand, ops int) errorfs.Injector {
	var mu sync.Mutex
	k := 1 + rng.IntN(max(ops/4, 1))
	kind, err := errorfs.OpFileWriteAt, error(syscall.ENOSPC)
	if rng.IntN(2) == 0 {
		kind, err = errorfs.OpFileSyncData, syscall.EIO
	}
	return errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind != kind || !strings.HasSuffix(op.Path, ".log") {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		k--
		if k == 0 {
			return err
		}
		return nil
	})
}

// TestFlushAlwaysGroupCommit: concurrent producers under flush.policy=always are
// acknowledged only once their batch is synced, and one fdatasync covers many
// batches; the high watermark never passes the synced offset.
func TestFlushAlwaysGroupCommit(t *testing.T) {
	fs := newCrashFS(t, 1)
	var syncs, writes countingInjector
	fs.SetInjector(errorfs.Any(&syncs, &writes))
	syncs.kind, writes.kind = errorfs.OpFileSyncData, errorfs.OpFileWriteAt
	syncs.delay = time.Millisecond // a disk's fdatasync takes about this long (ENVIRONMENT-NOTES)
	n := startCrashNode(t, fs, alwaysSpec())
	defer n.close(t)
	p := n.m.Partition("t", 0)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				res, err := p.Append(batchtest.Strings(batchtest.Plain, 1, fmt.Sprintf("%d-%d", g, i)), 1)
				if err != nil {
					t.Error(err)
					return
				}
				if err := p.WaitAcked(context.Background(), res.LeaderEpoch, res.LastOffset, 1); err != nil {
					t.Error(err)
					return
				}
				if synced := p.log.SyncedOffset(); synced <= res.LastOffset {
					t.Errorf("acknowledged offset %d, synced only below %d", res.LastOffset, synced)
				}
				if hw := p.HighWatermark(); hw > p.log.SyncedOffset() {
					t.Errorf("high watermark %d past the synced offset %d", hw, p.log.SyncedOffset())
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d segment writes, %d fdatasyncs", writes.n.Load(), syncs.n.Load())
	if s, w := syncs.n.Load(), writes.n.Load(); s >= w {
		t.Fatalf("%d fdatasyncs for %d writes: no group commit", s, w)
	}
}

// countingInjector counts the operations of one kind on segment files, and
// delays each by delay (a disk's latency).
type countingInjector struct {
	kind  errorfs.OpKind
	delay time.Duration
	n     atomic.Int64
}

func (c *countingInjector) String() string { return "count" }

func (c *countingInjector) MaybeError(op errorfs.Op) error {
	if op.Kind == c.kind && strings.HasSuffix(op.Path, ".log") {
		c.n.Add(1)
		time.Sleep(c.delay)
	}
	return nil
}

// TestFlushPolicies: interval syncs on its own within flush.ms; replicated syncs
// only rolled segments (and at close); a sync failure answers acks with
// KAFKA_STORAGE_ERROR, latches, and leaves reads working.
func TestFlushPolicies(t *testing.T) {
	t.Run("interval", func(t *testing.T) {
		fs := newCrashFS(t, 2)
		ts := alwaysSpec()
		ts.Config.Flush, ts.Config.FlushInterval = FlushInterval, 20*time.Millisecond
		n := startCrashNode(t, fs, ts)
		defer n.close(t)
		p := n.m.Partition("t", 0)
		res, err := p.Append(batchtest.Strings(batchtest.Plain, 1, "a"), 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.WaitAcked(context.Background(), res.LeaderEpoch, res.LastOffset, 1); err != nil { // at once
			t.Fatal(err)
		}
		waitFor(t, "the interval sync", func() bool { return p.log.SyncedOffset() > res.LastOffset })
		if p.UnsyncedBytes() != 0 {
			t.Fatalf("%d bytes unsynced after the interval sync", p.UnsyncedBytes())
		}
	})
	t.Run("replicated", func(t *testing.T) {
		fs := newCrashFS(t, 3)
		ts := alwaysSpec()
		ts.Config.Flush = FlushReplicated
		n := startCrashNode(t, fs, ts)
		defer n.close(t)
		p := n.m.Partition("t", 0)
		if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, "a"), 1); err != nil {
			t.Fatal(err)
		}
		if p.UnsyncedBytes() == 0 {
			t.Fatal("replicated synced an append")
		}
		for !p.log.NeedsSync() {
			if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, strings.Repeat("x", 500)), 1); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "the rolled segment's sync", func() bool { return !p.log.NeedsSync() })
	})
	t.Run("sync failure", func(t *testing.T) {
		fs := newCrashFS(t, 4)
		n := startCrashNode(t, fs, alwaysSpec())
		defer n.close(t)
		p := n.m.Partition("t", 0)
		res, err := p.Append(batchtest.Strings(batchtest.Plain, 1, "kept"), 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.WaitAcked(context.Background(), res.LeaderEpoch, res.LastOffset, 1); err != nil {
			t.Fatal(err)
		}
		fs.SetInjector(errorfs.InjectorFunc(func(op errorfs.Op) error {
			if op.Kind == errorfs.OpFileSyncData && strings.HasSuffix(op.Path, ".log") {
				return syscall.EIO
			}
			return nil
		}))
		res, err = p.Append(batchtest.Strings(batchtest.Plain, 1, "lost"), -1)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, "acks=all after a failed fdatasync", p.WaitAcked(context.Background(), res.LeaderEpoch, res.LastOffset, -1), kerr.KafkaStorageError)
		fs.SetInjector(nil) // the failure stays latched
		wantCode(t, "append after a failed fdatasync", appendErr(p, batchtest.Strings(batchtest.Plain, 1, "x")), kerr.KafkaStorageError)
		wantCode(t, "acks=1 after a failed fdatasync", p.WaitAcked(context.Background(), res.LeaderEpoch, res.LastOffset, 1), kerr.KafkaStorageError)
		s, err := p.Read(0, 1<<20) // what was acknowledged is still served
		if err != nil {
			t.Fatal(err)
		}
		if s.NextOffset != 1 {
			t.Fatalf("read after the failure ends at %d, want 1", s.NextOffset)
		}
		s.Release()
	})
}

// TestOfflineMissingSegment: a partition whose log misses a segment between two
// others is not opened: it is offline (Offline says why; logged once, not on every
// metadata change), and its files stay as they are.
func TestOfflineMissingSegment(t *testing.T) {
	fs := newCrashFS(t, 5)
	n := startCrashNode(t, fs, alwaysSpec())
	p := n.m.Partition("t", 0)
	for p.LogEndOffset() < 40 {
		if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, strings.Repeat("y", 400)), 1); err != nil {
			t.Fatal(err)
		}
	}
	n.close(t)
	names, err := fs.List("/data/topics/t-0")
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			segs = append(segs, name)
		}
	}
	if len(segs) < 3 {
		t.Fatalf("test setup: %d segments", len(segs))
	}
	slices.Sort(segs)
	if err := fs.Remove("/data/topics/t-0/" + segs[1]); err != nil {
		t.Fatal(err)
	}

	var logs syncbuf.Buffer
	db, err := offsets.Open("/data/meta", offsets.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Config{Dir: "/data/topics", FS: fs, Logger: slogTo(&logs), Store: func(key string) Store { return db.LogIndex(key) }})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(t, m, db)
	for rev := range int64(3) {
		if err := m.Apply(rev+1, []TopicSpec{alwaysSpec()}); err != nil {
			t.Fatal(err)
		}
	}
	if m.Partition("t", 0) != nil {
		t.Fatal("a log with a missing segment is served")
	}
	if err := m.Offline("t", 0); !errors.Is(err, logstore.ErrSegmentMissing) {
		t.Fatalf("Offline: %v", err)
	}
	if c := strings.Count(logs.String(), "partition offline"); c != 1 {
		t.Fatalf("%d 'partition offline' log lines, want 1:\n%s", c, logs.String())
	}
	if !strings.Contains(logs.String(), segs[2]) {
		t.Fatalf("the log line does not name the segment after the gap (%s):\n%s", segs[2], logs.String())
	}
	after, err := fs.List("/data/topics/t-0")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(names)-1 {
		t.Fatalf("files changed: %v, then %v", names, after)
	}
}

// waitFor polls cond until it holds, failing after 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling a condition with a deadline
	}
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
