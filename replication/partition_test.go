package replication

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/goleak"

	"skiff/compaction"
	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
	"skiff/offsets"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newManager opens a manager on dir with a real Pebble index in dir/meta.
func newManager(t *testing.T, dir string) (*Manager, *offsets.DB) {
	t.Helper()
	db, err := offsets.Open(filepath.Join(dir, "meta"), offsets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Config{
		Dir:   filepath.Join(dir, "topics"),
		Store: func(key string) Store { return db.LogIndex(key) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, db
}

func closeAll(t *testing.T, m *Manager, db *offsets.DB) {
	t.Helper()
	if err := m.Close(); err != nil {
		t.Error(err)
	}
	if err := db.Close(); err != nil {
		t.Error(err)
	}
}

var defaultCfg = PartitionConfig{MaxMessageBytes: 1 << 20}

// spec is a topic whose partitions 0..partitions-1 all lead on broker 0 (the
// manager's BrokerID in these tests).
func spec(name string, id byte, partitions int32) TopicSpec {
	t := TopicSpec{Name: name, ID: [16]byte{id}, Config: defaultCfg}
	for i := range partitions {
		t.Partitions = append(t.Partitions, PartitionSpec{ID: i, Leader: 0, Replicas: []int32{0}, ISR: []int32{0}})
	}
	return t
}

func wantCode(t *testing.T, what string, err error, want *kerr.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %s", what, err, want.Message)
	}
}

func TestAppendValidation(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	now := time.Now().UnixMilli()

	res, err := p.Append(batchtest.Strings(batchtest.Plain, now, "a", "b", "c"), 1)
	if err != nil || res.BaseOffset != 0 || res.LogAppendTime != -1 {
		t.Fatalf("first append: %+v %v", res, err)
	}
	if p.HighWatermark() != 3 || p.LogEndOffset() != 3 {
		t.Fatalf("hw %d leo %d, want 3", p.HighWatermark(), p.LogEndOffset())
	}
	good := batchtest.Strings(batchtest.Plain, now, "d")
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff
	wantCode(t, "flipped byte", appendErr(p, corrupt), kerr.CorruptMessage)
	wantCode(t, "two batches", appendErr(p, append(append([]byte(nil), good...), good...)), kerr.InvalidRecord)
	wantCode(t, "garbage", appendErr(p, []byte("not a batch at all")), kerr.CorruptMessage)
	big := batchtest.Build(batchtest.Plain, now, make([]byte, 2<<20))
	wantCode(t, "too large", appendErr(p, big), kerr.MessageTooLarge)
	txn := batchtest.Strings(batchtest.Plain, now, "t")
	txn[22] |= batch.AttrTransactional
	binaryFixCRC(txn)
	wantCode(t, "transactional without a producer", appendErr(p, txn), kerr.InvalidRecord)
	if p.LogEndOffset() != 3 {
		t.Fatalf("refused batches were appended: log end %d", p.LogEndOffset())
	}
	// Reads return what was appended, below the high watermark.
	s, err := p.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if s.NextOffset != 3 || len(s.Ranges) != 1 {
		t.Fatalf("read: next %d, %d ranges", s.NextOffset, len(s.Ranges))
	}
	wantCode(t, "read past the end", readErr(p, 4), kerr.OffsetOutOfRange)
	wantCode(t, "read before the start", readErr(p, -1), kerr.OffsetOutOfRange)
}

func appendErr(p *Partition, b []byte) error { _, err := p.Append(b, 1); return err }

func readErr(p *Partition, off int64) error {
	s, err := p.Read(off, 1<<20)
	if err == nil {
		s.Release()
	}
	return err
}

func binaryFixCRC(b []byte) {
	c := batch.CRC(b)
	b[17], b[18], b[19], b[20] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
}

// TestIdempotentProducer checks the sequence rules of PROTOCOL.md, and that they hold
// across a restart (the state is rebuilt from the log).
func TestIdempotentProducer(t *testing.T) {
	dir := t.TempDir()
	m, db := newManager(t, dir)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	now := time.Now().UnixMilli()
	pid := int64(42)
	b := func(epoch int16, seq int32, n int) []byte {
		vs := make([]string, n)
		for i := range vs {
			vs[i] = "v"
		}
		return batchtest.Strings(batchtest.Producer{ID: pid, Epoch: epoch, Sequence: seq}, now, vs...)
	}
	offsetsOf := make(map[int32]int64)
	for seq := int32(0); seq < 20; seq += 2 {
		res, err := p.Append(b(0, seq, 2), 1)
		if err != nil || res.Duplicate {
			t.Fatalf("seq %d: %+v %v", seq, res, err)
		}
		offsetsOf[seq] = res.BaseOffset
	}
	// A retry of one of the last five batches: its original offset, nothing appended.
	end := p.LogEndOffset()
	res, err := p.Append(b(0, 12, 2), 1)
	if err != nil || !res.Duplicate || res.BaseOffset != offsetsOf[12] || p.LogEndOffset() != end {
		t.Fatalf("duplicate: %+v %v, log end %d -> %d", res, err, end, p.LogEndOffset())
	}
	wantCode(t, "older than the last five", appendErr(p, b(0, 2, 2)), kerr.OutOfOrderSequenceNumber)
	wantCode(t, "gap", appendErr(p, b(0, 21, 1)), kerr.OutOfOrderSequenceNumber)
	wantCode(t, "new epoch not at 0", appendErr(p, b(1, 5, 1)), kerr.OutOfOrderSequenceNumber)
	pid = 43
	wantCode(t, "unknown producer above 0", appendErr(p, b(0, 3, 1)), kerr.UnknownProducerID)
	pid = 42
	if p.LogEndOffset() != end {
		t.Fatalf("refused batches were appended")
	}

	// Restart: the state comes back from the log.
	closeAll(t, m, db)
	m, db = newManager(t, dir)
	defer closeAll(t, m, db)
	if err := m.Apply(2, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p = m.Partition("t", 0)
	res, err = p.Append(b(0, 18, 2), 1)
	if err != nil || !res.Duplicate || res.BaseOffset != offsetsOf[18] {
		t.Fatalf("duplicate after restart: %+v %v", res, err)
	}
	if _, err := p.Append(b(0, 20, 1), 1); err != nil {
		t.Fatalf("next sequence after restart: %v", err)
	}
	if _, err := p.Append(b(1, 0, 1), 1); err != nil {
		t.Fatalf("new epoch at 0: %v", err)
	}
	wantCode(t, "old epoch after a new one", appendErr(p, b(0, 21, 1)), kerr.InvalidProducerEpoch)
}

func TestLogAppendTime(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	s := spec("t", 1, 1)
	s.Config.LogAppendTime = true
	if err := m.Apply(1, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	before := time.Now().UnixMilli()
	res, err := p.Append(batchtest.Strings(batchtest.Plain, 1000, "old"), 1)
	if err != nil || res.LogAppendTime < before {
		t.Fatalf("append: %+v %v", res, err)
	}
	off, ts, ok, err := p.OffsetForTimestamp(before)
	if err != nil || !ok || off != 0 || ts != res.LogAppendTime {
		t.Fatalf("OffsetForTimestamp: %d %d %v %v", off, ts, ok, err)
	}
}

func TestWaiterWokenByAppend(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	ch := make(chan struct{}, 1)
	p.AddWaiter(ch)
	if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, "x"), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("waiter not woken by an append")
	}
	p.RemoveWaiter(ch)
	if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, "y"), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("removed waiter woken")
	default:
	}
}

// TestApply covers the manager following the metadata: partitions opened, a topic
// deleted, a topic recreated under the same name with a new id (its old records are
// gone), and folders that belong to no topic removed.
func TestApply(t *testing.T) {
	dir := t.TempDir()
	m, db := newManager(t, dir)
	if err := m.Apply(1, []TopicSpec{spec("a", 1, 2), spec("b", 2, 1)}); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Partitions()); n != 3 {
		t.Fatalf("%d partitions, want 3", n)
	}
	if _, err := m.Partition("a", 1).Append(batchtest.Strings(batchtest.Plain, 1, "x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(2, []TopicSpec{spec("b", 2, 1)}); err != nil {
		t.Fatal(err)
	}
	if m.Partition("a", 0) != nil {
		t.Fatal("deleted topic still served")
	}
	if _, err := os.Stat(filepath.Join(dir, "topics", "a-1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted topic's folder: %v", err)
	}
	if _, err := m.Partition("b", 0).Append(batchtest.Strings(batchtest.Plain, 1, "y"), 1); err != nil {
		t.Fatal(err)
	}
	closeAll(t, m, db)

	// While this node was down, b was deleted and created again (new id), and a
	// folder appeared that no topic owns.
	if err := os.MkdirAll(filepath.Join(dir, "topics", "ghost-0"), 0o750); err != nil {
		t.Fatal(err)
	}
	m, db = newManager(t, dir)
	defer closeAll(t, m, db)
	if err := m.Apply(3, []TopicSpec{spec("b", 3, 1)}); err != nil {
		t.Fatal(err)
	}
	if leo := m.Partition("b", 0).LogEndOffset(); leo != 0 {
		t.Fatalf("recreated topic inherited %d records", leo)
	}
	if _, err := os.Stat(filepath.Join(dir, "topics", "ghost-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stray folder: %v", err)
	}
}

func TestWaitHighWatermark(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.WaitHighWatermark(ctx, -1, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("nothing appended yet: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- p.WaitHighWatermark(context.Background(), -1, 1) }()
	for _, v := range []string{"a", "b"} {
		if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, v), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("offset 1 appended: %v", err)
	}
}

// TestEpochsRebuiltFromLog: a damaged leader-epoch checkpoint is rebuilt from the
// leader epochs the batches carry.
func TestEpochsRebuiltFromLog(t *testing.T) {
	dir := t.TempDir()
	m, db := newManager(t, dir)
	s := spec("t", 1, 1)
	s.Partitions[0].LeaderEpoch = 3
	if err := m.Apply(1, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	for _, v := range []string{"a", "b"} {
		if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, v), 1); err != nil {
			t.Fatal(err)
		}
	}
	closeAll(t, m, db)
	path := filepath.Join(dir, "topics", "t-0", epochsFile)
	if err := os.WriteFile(path, []byte("garbage"), 0o640); err != nil {
		t.Fatal(err)
	}
	m, db = newManager(t, dir)
	defer closeAll(t, m, db)
	if err := m.Apply(2, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	if e, end := m.Partition("t", 0).EndOffsetForEpoch(3); e != 3 || end != 2 {
		t.Fatalf("after rebuild: epoch 3 ends at (%d, %d), want (3, 2)", e, end)
	}
	if _, err := loadEpochs(vfs.Default, filepath.Join(dir, "topics", "t-0")); err != nil {
		t.Fatalf("rebuilt checkpoint not saved: %v", err)
	}
}

// TestCompactedTopicNeedsKeys: a compacted topic refuses a batch holding a
// record without a key with INVALID_RECORD, in any codec, and appends nothing
// of it; batches whose records all have keys (a tombstone included) go in.
func TestCompactedTopicNeedsKeys(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	s := spec("c", 1, 1)
	s.Config.Compaction = compaction.Config{Compact: true}
	if err := m.Apply(1, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("c", 0)
	now := time.Now().UnixMilli()
	kv := func(k string, v string) batchtest.KV {
		r := batchtest.KV{Value: []byte(v)}
		if k != "" {
			r.Key = []byte(k)
		}
		return r
	}
	for _, c := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		end := p.LogEndOffset()
		_, err := p.Append(batchtest.Keyed(batchtest.Plain, now, c, false, kv("a", "1"), kv("", "no key"), kv("b", "2")), 1)
		wantCode(t, c.String()+": a record without a key", err, kerr.InvalidRecord)
		if p.LogEndOffset() != end {
			t.Fatalf("%s: part of a refused batch was appended", c)
		}
		tomb := batchtest.KV{Key: []byte("gone")}
		if _, err := p.Append(batchtest.Keyed(batchtest.Plain, now, c, false, kv("a", "1"), tomb), 1); err != nil {
			t.Fatalf("%s: keyed batch: %v", c, err)
		}
	}
	// A topic that is not compacted takes records without keys.
	if err := m.Apply(2, []TopicSpec{spec("c", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(batchtest.Keyed(batchtest.Plain, now, compress.None, false, kv("", "no key")), 1); err != nil {
		t.Fatal(err)
	}
}

// leadWithFollower applies topic "t" with one partition led by this broker (0)
// with broker 1 as an in-sync follower, and returns its spec and the partition.
func leadWithFollower(t *testing.T, m *Manager) (TopicSpec, *Partition) {
	t.Helper()
	s := spec("t", 1, 1)
	s.Partitions[0].Replicas, s.Partitions[0].ISR = []int32{0, 1}, []int32{0, 1}
	if err := m.Apply(1, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	return s, m.Partition("t", 0)
}

// TestHighWatermarkKnown: a leader whose high watermark is below the log end it
// started its epoch at does not know what its predecessor committed, until a
// follower's fetch moves the high watermark there.
func TestHighWatermarkKnown(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	s, p := leadWithFollower(t, m)
	if !p.HighWatermarkKnown() {
		t.Fatal("an empty log's leader: high watermark unknown")
	}
	for _, v := range []string{"a", "b"} {
		if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, v), 1); err != nil {
			t.Fatal(err)
		}
	}
	// A new epoch of the same leader starts at log end 2 with the high watermark
	// still 0: follower 1 never fetched.
	s.Partitions[0].LeaderEpoch = 1
	if err := m.Apply(2, []TopicSpec{s}); err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 0 || p.HighWatermarkKnown() {
		t.Fatalf("new epoch at log end 2: high watermark %d, known %v; want 0, false", p.HighWatermark(), p.HighWatermarkKnown())
	}
	sl, err := p.ReadReplica(1, 1, 2, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	sl.Release()
	if p.HighWatermark() != 2 || !p.HighWatermarkKnown() {
		t.Fatalf("follower at 2: high watermark %d, known %v; want 2, true", p.HighWatermark(), p.HighWatermarkKnown())
	}
}

// TestReplicaWaiterWokenByRecordsOnly: a parked follower fetch (AddReplicaWaiter)
// is not woken when another follower's fetch moves the high watermark, while a
// consumer's (AddWaiter) is; both are woken by an append.
func TestReplicaWaiterWokenByRecordsOnly(t *testing.T) {
	m, db := newManager(t, t.TempDir())
	defer closeAll(t, m, db)
	_, p := leadWithFollower(t, m)
	if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, "a"), 1); err != nil {
		t.Fatal(err)
	}
	follower, consumer := make(chan struct{}, 1), make(chan struct{}, 1)
	p.AddReplicaWaiter(follower)
	defer p.RemoveReplicaWaiter(follower)
	p.AddWaiter(consumer)
	defer p.RemoveWaiter(consumer)
	sl, err := p.ReadReplica(1, 0, 1, 0, 1<<20) // follower 1 has offset 0: the high watermark moves to 1
	if err != nil {
		t.Fatal(err)
	}
	sl.Release()
	if p.HighWatermark() != 1 {
		t.Fatalf("high watermark %d after the follower's fetch at 1, want 1", p.HighWatermark())
	}
	select {
	case <-consumer:
	default:
		t.Fatal("consumer waiter not woken by the high watermark move")
	}
	select {
	case <-follower:
		t.Fatal("follower waiter woken by a high watermark move")
	default:
	}
	if _, err := p.Append(batchtest.Strings(batchtest.Plain, 1, "b"), 1); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan struct{}{"follower": follower, "consumer": consumer} {
		select {
		case <-ch:
		default:
			t.Fatalf("%s waiter not woken by an append", name)
		}
	}
}
