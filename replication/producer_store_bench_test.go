package replication

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

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
		if _, err := p.WriteMarker(pid, 0, txns%3 != 0, 0); err != nil {
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
