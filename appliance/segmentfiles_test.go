package appliance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/cluster"
)

// segmentDescriptors counts this process's descriptors (/proc/self/fd) of
// segment files under topics, and all its descriptors.
func segmentDescriptors(t *testing.T, topics string) (segments, all int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // closed since the listing
		}
		all++
		if strings.HasPrefix(target, topics+string(filepath.Separator)) && strings.Contains(target, ".log") {
			segments++
		}
	}
	return segments, all
}

// TestSegmentFilesWithinBudget: 2,000 partitions of three segments each (two
// sealed) on a node whose segment file cache holds 64 idle files. At rest the
// node holds one descriptor per partition (its active segment) plus at most the
// cache's 64, not one per segment; a franz-go consumer reads every record of
// every segment back, so sealed files are opened, evicted and opened again, and
// afterwards the node is back within the same bound.
func TestSegmentFilesWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 2,000 partitions")
	}
	const (
		topics, perTopic = 20, 100
		partitions       = topics * perTopic
		rounds           = 3 // one batch per partition each: three segments
		cacheSize        = 64
	)
	n := startLoopbackNode(t, Config{SegmentFileCache: cacheSize})
	topicsDir := filepath.Join(n.cfg.DataDir, "topics")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	one := "1" // every batch after a segment's first rolls a new segment
	var names []string
	for i := range topics {
		names = append(names, fmt.Sprintf("fd-%02d", i))
	}
	res, err := adm.CreateTopics(ctx, perTopic, 1, map[string]*string{cluster.ConfigInternalSegmentBytes: &one}, names...)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}

	for round := range rounds {
		var recs []*kgo.Record
		for _, topic := range names {
			for p := range int32(perTopic) {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s/%d/%d", topic, p, round)})
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	files, err := filepath.Glob(filepath.Join(topicsDir, "*", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != partitions*rounds {
		t.Fatalf("%d segment files, want %d (one per batch)", len(files), partitions*rounds)
	}
	budget := partitions + cacheSize
	segs, all := segmentDescriptors(t, topicsDir)
	t.Logf("after producing: %d segment files on disk, %d open; %d descriptors in the process", len(files), segs, all)
	if segs > budget {
		t.Fatalf("%d segment files open after producing, want at most %d (active segments + cache)", segs, budget)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumeTopics(names...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := make(map[string]bool, partitions*rounds)
	peak := 0
	for len(seen) < partitions*rounds {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(seen), partitions*rounds, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			want := fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)
			if string(r.Value) != want {
				t.Fatalf("record at %s/%d offset %d is %q, want %q", r.Topic, r.Partition, r.Offset, r.Value, want)
			}
			seen[want] = true
		})
		segs, _ := segmentDescriptors(t, topicsDir)
		peak = max(peak, segs)
	}
	cons.Close()
	// Fetches answered by now let go of their files; the cache closes the idle
	// ones beyond its capacity when they are released.
	deadline := time.Now().Add(30 * time.Second)
	for {
		segs, all = segmentDescriptors(t, topicsDir)
		if segs <= budget || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling /proc with a deadline
	}
	t.Logf("after consuming: %d segment files open (peak while fetching %d); %d descriptors in the process", segs, peak, all)
	if segs > budget {
		t.Fatalf("%d segment files open after consuming, want at most %d (active segments + cache)", segs, budget)
	}
	// The rest of the process (etcd, Pebble, sockets) takes a few dozen.
	if all > budget+200 {
		t.Fatalf("the process holds %d descriptors, want at most %d", all, budget+200)
	}
}
