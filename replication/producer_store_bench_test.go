package replication

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/batch"
	"skiff/offsets"
)

// BenchmarkPartitionOpen opens a partition whose log holds SKIFF_BENCH_OPEN_MB
// (default 64) MiB of transactional batches (8 producers, 16 batches of ~4 KiB
// per transaction, every third aborted): "replay" without a producer snapshot
// (every batch header read, as before snapshots existed), "snapshot" with the one
// the last close wrote, "tail10" with one taken at 90% of the log (as after a
// crash, replaying the last tenth). Same log, same run:
//
//	SKIFF_BENCH_OPEN_MB=1024 CGO_ENABLED=0 go test ./replication -run XXX -bench PartitionOpen -benchtime 5x
func BenchmarkPartitionOpen(b *testing.B) {
	mb := 64
	if s := os.Getenv("SKIFF_BENCH_OPEN_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	s := spec("t", 1, 1)
	s.Config.Log.RetentionMs = -1
	s.Config.MaxMessageBytes = 1 << 20
	db, err := offsets.Open(filepath.Join(dir, "meta"), offsets.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	m, err := NewManager(Config{Dir: filepath.Join(dir, "topics"), Store: func(key string) Store { return db.LogIndex(key) }})
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Apply(1, []TopicSpec{s}); err != nil {
		b.Fatal(err)
	}
	p := m.Partition("t", 0)
	vals := make([]string, 32)
	for i := range vals {
		vals[i] = strings.Repeat("x", 120)
	}
	seqs := map[int64]int32{}
	written, txns := int64(0), 0
	var tailOff int64
	var tailSnap []byte
	for written < int64(mb)<<20 {
		if tailSnap == nil && written >= int64(mb)<<20*9/10 {
			if err := p.snapshotProducers(); err != nil {
				b.Fatal(err)
			}
			var ok bool
			if tailOff, tailSnap, ok, err = db.LogIndex(PartitionKey("t", 0)).ProducerSnapshot(); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
		pid := int64(1 + txns%8)
		for range 16 {
			bt := txnBatch(pid, 0, seqs[pid], vals...)
			seqs[pid] += int32(len(vals))
			if _, err := p.Append(bt, 1); err != nil {
				b.Fatal(err)
			}
			written += int64(len(bt))
		}
		if _, err := p.WriteMarker(pid, 0, txns%3 != 0, 0, false); err != nil {
			b.Fatal(err)
		}
		txns++
	}
	end := p.LogEndOffset()
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("log of %d MiB, %d offsets, %d transactions", written>>20, end, txns)

	key := PartitionKey("t", 0)
	open := func(b *testing.B) {
		p, err := openPartition(vfs.Default, filepath.Join(dir, "topics", key), "t", 0, s.ID, s.Config, db.LogIndex(key), 0, 0, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		if got := len(p.AbortedTxns(0, end)); got != (txns+2)/3 {
			b.Fatalf("%d aborted transactions, want %d", got, (txns+2)/3)
		}
		b.StopTimer()
		if err := p.close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	for _, c := range []struct {
		name  string
		setup ProducerStateUpdate // applied before each open
	}{
		{"replay", ProducerStateUpdate{DeleteSnapshot: true}},
		{"snapshot", ProducerStateUpdate{}},
		{"tail10", ProducerStateUpdate{SetSnapshot: true, SnapshotOffset: tailOff, Snapshot: tailSnap}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				if err := db.LogIndex(key).UpdateProducerState(c.setup); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				open(b)
			}
		})
	}
}

// BenchmarkProducerSnapshot takes snapshots of a partition with
// SKIFF_BENCH_PRODUCERS (default 100000) idempotent producers, of which
// "changed" appended a batch since the previous snapshot: "legacy" is the
// snapshot as it was before incremental snapshots (the whole state encoded and
// written under appendMu), "incremental" the current one. held-p50-ns and
// held-max-ns are how long appendMu is held (appends wait that long), ns/op the
// whole snapshot. Same run:
//
//	CGO_ENABLED=0 go test ./replication -run XXX -bench ProducerSnapshot -benchtime 20x
func BenchmarkProducerSnapshot(b *testing.B) {
	producers := 100000
	if s := os.Getenv("SKIFF_BENCH_PRODUCERS"); s != "" {
		var err error
		if producers, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	db, err := offsets.Open(filepath.Join(dir, "meta"), offsets.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	// No Manager: its checkpoint loop would take snapshots of its own.
	key := PartitionKey("t", 0)
	p, err := openPartition(vfs.Default, filepath.Join(dir, key), "t", 0, [16]byte{1}, defaultCfg, db.LogIndex(key), 0, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer p.close()
	next := int64(0) // offsets of the batches noted (the state, not the log, is measured)
	note := func(pid int64) {
		e := p.producers.m[pid]
		seq := int32(0)
		if e != nil {
			seq = e.lastSeq() + 1
		}
		h := batch.Header{BaseOffset: next, LastOffsetDelta: 9, MaxTimestamp: time.Now().UnixMilli(), ProducerID: pid, BaseSequence: seq, RecordCount: 10}
		next += 10
		if _, err := p.noteLocked(&h, nil); err != nil {
			b.Fatal(err)
		}
	}
	p.appendMu.Lock()
	for pid := range int64(producers) {
		for range maxBatchesRetained {
			note(pid)
		}
	}
	p.appendMu.Unlock()
	if err := p.snapshotProducers(); err != nil {
		b.Fatal(err)
	}
	for _, changed := range []int{100, producers} {
		for _, c := range []struct {
			name string
			snap func() (held time.Duration, err error)
		}{
			{"legacy", func() (time.Duration, error) {
				start := time.Now()
				err := legacySnapshot(p)
				return time.Since(start), err
			}},
			{"incremental", func() (time.Duration, error) {
				p.snap.mu.Lock()
				defer p.snap.mu.Unlock()
				start := time.Now()
				end, gen, ok := p.captureSnapshot()
				held := time.Since(start)
				if !ok {
					return held, fmt.Errorf("nothing captured: %d dirty, abortUnrecorded %v", len(p.snap.dirty), p.abortUnrecorded)
				}
				return held, p.writeSnapshot(end, gen)
			}},
		} {
			b.Run(fmt.Sprintf("changed=%d/%s", changed, c.name), func(b *testing.B) {
				held := make([]time.Duration, 0, b.N)
				for i := range b.N {
					b.StopTimer()
					p.appendMu.Lock()
					if c.name == "legacy" {
						clear(p.snap.dirty) // its snapshots leave them for the incremental ones
					}
					for j := range changed {
						note(int64((i*changed + j) % producers))
					}
					p.appendMu.Unlock()
					b.StartTimer()
					d, err := c.snap()
					if err != nil {
						b.Fatal(err)
					}
					held = append(held, d)
				}
				slices.Sort(held)
				b.ReportMetric(float64(held[len(held)/2].Nanoseconds()), "held-p50-ns")
				b.ReportMetric(float64(held[len(held)-1].Nanoseconds()), "held-max-ns")
			})
		}
	}
}

// legacySnapshot is the snapshot before incremental snapshots, the baseline
// of BenchmarkProducerSnapshot: it encodes every producer, open transaction,
// marker count and coordinator epoch and writes them, all under appendMu.
func legacySnapshot(p *Partition) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	be := binary.BigEndian
	b := []byte{snapshotVersion}
	b = be.AppendUint32(b, uint32(len(p.producers.m)))
	for pid, e := range p.producers.m {
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint64(b, uint64(e.lastMs))
		b = append(b, byte(len(e.batches)))
		for _, r := range e.batches {
			b = be.AppendUint32(b, uint32(r.firstSeq))
			b = be.AppendUint32(b, uint32(r.lastSeq))
			b = be.AppendUint64(b, uint64(r.baseOffset))
			b = be.AppendUint64(b, uint64(r.lastOffset))
		}
	}
	x := p.txns
	x.mu.Lock()
	defer x.mu.Unlock()
	b = be.AppendUint32(b, uint32(len(x.open)))
	for pid, t := range x.open {
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint16(b, uint16(t.Epoch))
		b = be.AppendUint64(b, uint64(t.FirstOffset))
	}
	b = be.AppendUint32(b, uint32(len(x.markers)))
	for pid, n := range x.markers {
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint64(b, n)
	}
	b = be.AppendUint32(b, uint32(len(x.coordinatorEpochs)))
	for pid, ce := range x.coordinatorEpochs {
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint32(b, uint32(ce))
	}
	end := p.log.LogEndOffset()
	return p.store.UpdateProducerState(ProducerStateUpdate{SetSnapshot: true, SnapshotOffset: end, Snapshot: b})
}
