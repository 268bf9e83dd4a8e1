package kafkaapi_test

// DescribeLogDirs (key 35): conformance at each version, and sizes equal to the
// bytes of the segment files on disk, read through kadm.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { conformanceTests[35] = conformDescribeLogDirs }

// sharedTopicsDir is the shared node's folder of replicas, its one log directory.
func sharedTopicsDir(t *testing.T) string {
	sharedNode(t)
	dir, err := filepath.Abs(filepath.Join(shared.dir, "topics"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// segmentBytes is the size of the segment files of topic/partition in dir.
func segmentBytes(t *testing.T, dir, topic string, partition int32) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, topic+"-"+strconv.Itoa(int(partition)), "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("segments of %s-%d: %v %v", topic, partition, files, err)
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// conformDescribeLogDirs: at every version, the node's one directory with the
// requested partitions it holds (not the one it does not), sizes as on disk and
// no lag; all partitions when topics is null; total and usable bytes from v4.
func conformDescribeLogDirs(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 2, nil)
	mustProduce(t, c, topic, 0, makeBatch(noProducer, "a", "b", "c"))
	mustProduce(t, c, topic, 1, makeBatch(noProducer, "d"))
	dir := sharedTopicsDir(t)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			req.SetVersion(v)
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{1, 0, 7}
			req.Topics = append(req.Topics, rt)
			resp := c.do(req).(*kmsg.DescribeLogDirsResponse)
			wantCode(t, "DescribeLogDirs", resp.ErrorCode, 0)
			if len(resp.Dirs) != 1 {
				t.Fatalf("%d directories, want 1", len(resp.Dirs))
			}
			d := resp.Dirs[0]
			wantCode(t, "directory", d.ErrorCode, 0)
			if d.Dir != dir {
				t.Errorf("directory %q, want %q", d.Dir, dir)
			}
			if v >= 4 && (d.TotalBytes <= 0 || d.UsableBytes < 0 || d.UsableBytes > d.TotalBytes) {
				t.Errorf("total %d, usable %d bytes", d.TotalBytes, d.UsableBytes)
			}
			if v < 4 && (d.TotalBytes != -1 || d.UsableBytes != -1) {
				t.Errorf("total %d, usable %d bytes before v4, want -1 (not in the answer)", d.TotalBytes, d.UsableBytes)
			}
			if len(d.Topics) != 1 || d.Topics[0].Topic != topic || len(d.Topics[0].Partitions) != 2 {
				t.Fatalf("topics %+v, want %s with partitions 0 and 1", d.Topics, topic)
			}
			for i, p := range d.Topics[0].Partitions {
				if p.Partition != int32(i) || p.Size != segmentBytes(t, dir, topic, p.Partition) || p.Size == 0 || p.OffsetLag != 0 || p.IsFuture {
					t.Errorf("partition %+v, want %d with %d bytes, no lag, not future", p, i, segmentBytes(t, dir, topic, int32(i)))
				}
			}

			req.Topics = nil
			all := c.do(req).(*kmsg.DescribeLogDirsResponse)
			found := false
			for _, at := range all.Dirs[0].Topics {
				found = found || at.Topic == topic && len(at.Partitions) == 2
			}
			if !found {
				t.Errorf("all partitions: %s missing or incomplete", topic)
			}
		})
	}
}

// TestDescribeLogDirsSizes: after records of several sizes, kadm's
// DescribeAllLogDirs reports for each partition the bytes its segment files take
// on disk, and the directory's usable bytes are at most its total.
func TestDescribeLogDirsSizes(t *testing.T) {
	n := sharedNode(t)
	topic := topicName(t, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		r := &kgo.Record{Partition: int32(i % 3), Value: make([]byte, i*37)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	described, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := sharedTopicsDir(t)
	d, ok := described[n.ID()][dir]
	if !ok || d.Err != nil {
		t.Fatalf("node %d directory %s: %+v (found %v)", n.ID(), dir, d, ok)
	}
	if d.TotalBytes <= 0 || d.UsableBytes > d.TotalBytes {
		t.Errorf("total %d, usable %d bytes", d.TotalBytes, d.UsableBytes)
	}
	for p := range int32(3) {
		got, ok := d.Topics.Lookup(topic, p)
		if want := segmentBytes(t, dir, topic, p); !ok || got.Size != want || want < 100*int64(p)*37 {
			t.Errorf("partition %d: %d bytes (found %v), %d on disk", p, got.Size, ok, want)
		}
	}
}
