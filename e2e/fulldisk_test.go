package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batchtest"
	"skiff/internal/testnode"
)

// TestFullDisk runs a real node with its data directory on a small tmpfs that the
// test fills up: a produce the disk cannot take is answered KAFKA_STORAGE_ERROR
// (56), nothing of it becomes visible, consumers still read everything
// acknowledged, produce works again once files are removed, and after a restart
// every acknowledged record is there, in order, once. Needs root (mount); skipped
// otherwise.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping the full-disk test: mounting a small tmpfs needs root (CI runs as root)")
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	// etcd preallocates its 64 MB WAL segment and then, in the background, the next
	// one; the rest is for the topic. The tmpfs has room for both: the background
	// preallocation takes all the space there is before it gives up, and etcd exits
	// if a write of its own fails meanwhile (its database as it starts, or the tail
	// of its WAL, which it preallocates again as it restarts: "failed to read WAL,
	// cannot be repaired: no space left on device").
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=200m", "skiff-full-disk", mnt).CombinedOutput(); err != nil {
		t.Skipf("skipping the full-disk test: cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { // after the node stopped (cleanups run last first)
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	n := testnode.New(t)
	n.DataDir = filepath.Join(mnt, "data")
	n.Restart()

	const topic = "full"
	createTopic(t, n.Addr, topic, 1) // one replica: flush.policy=always
	cl := newClient(t, n.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var acked []string
	seq := 0
	produce := func(size int) int16 {
		t.Helper()
		v := fmt.Sprintf("%06d-%s", seq, strings.Repeat("v", size))
		seq++
		code := produceRaw(t, ctx, cl, topic, batchtest.Strings(batchtest.Plain, time.Now().UnixMilli(), v))
		if code == 0 {
			acked = append(acked, v)
		}
		return code
	}
	for range 20 {
		if code := produce(4 << 10); code != 0 {
			t.Fatalf("produce before the disk is full: %s", kerr.ErrorForCode(code))
		}
	}

	// Fill the filesystem, leaving a little room, so that the next batches fail, once
	// etcd's next WAL segment is there (its preallocation would take that room).
	nextWAL := filepath.Join(n.DataDir, "etcd", "member", "wal", "0.tmp")
	poll(t, 30*time.Second, "etcd to preallocate its next WAL segment", func() bool {
		fi, err := os.Stat(nextWAL)
		return err == nil && fi.Size() >= 64_000_000
	})
	filler := filepath.Join(mnt, "filler")
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	t.Logf("tmpfs: %d MiB free after start", free>>20)
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, free-200<<10); err != nil {
		t.Fatalf("fill the tmpfs: %v", err)
	}
	f.Close()

	refused := 0
	for i := 0; i < 40 && refused < 3; i++ {
		end := logEndOffset(t, ctx, cl, topic)
		switch code := produce(60 << 10); code {
		case 0:
		case kerr.KafkaStorageError.Code:
			refused++
			if got := logEndOffset(t, ctx, cl, topic); got != end {
				t.Fatalf("a refused produce moved the log end from %d to %d", end, got)
			}
		default:
			t.Fatalf("produce on a full disk: %s, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
		}
	}
	if refused == 0 {
		t.Fatal("no produce was refused on a full disk")
	}
	t.Logf("%d records acknowledged, %d produces refused with KAFKA_STORAGE_ERROR", len(acked), refused)
	// Consumers read everything acknowledged, and nothing else, while the disk is full.
	if got := consumePartition(t, ctx, n.Addr, topic, logEndOffset(t, ctx, cl, topic)); !slices.Equal(got, acked) {
		t.Fatalf("read %d records on a full disk, want the %d acknowledged", len(got), len(acked))
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if code := produce(60 << 10); code != 0 {
			t.Fatalf("produce after space was freed: %s", kerr.ErrorForCode(code))
		}
	}

	n.Stop()
	n.Restart()
	cl2 := newClient(t, n.Addr)
	if got := consumePartition(t, ctx, n.Addr, topic, logEndOffset(t, ctx, cl2, topic)); !slices.Equal(got, acked) {
		t.Fatalf("read %d records after the restart, want the %d acknowledged", len(got), len(acked))
	}
}

// produceRaw sends one batch to partition 0 with acks=all and returns the
// partition's error code.
func produceRaw(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, records []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// logEndOffset is partition 0's high watermark (ListOffsets latest).
func logEndOffset(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var end int64
	// A restarted node may briefly have no leader for the partition, while the
	// controller admits its new broker epoch to the ISR: retriable errors are asked again.
	poll(t, 30*time.Second, "the log end offset", func() bool {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("list offsets: %v", err)
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			if kerr.IsRetriable(err) {
				return false
			}
			t.Fatalf("list offsets: %v", err)
		}
		end = p.Offset
		return true
	})
	return end
}

// consumePartition reads partition 0 from its start up to end and returns the values.
func consumePartition(t *testing.T, ctx context.Context, addr, topic string, end int64) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	var got []string
	next := int64(0)
	for next < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read up to offset %d of %d", next, end)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next {
				t.Fatalf("record at offset %d, want %d", r.Offset, next)
			}
			got = append(got, string(r.Value))
			next++
		})
	}
	return got
}
