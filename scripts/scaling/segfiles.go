package main

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// segFilesResult is one round of the open-files mode (-segment-files): a node
// with many partitions of several segments each.
type segFilesResult struct {
	Build      string `json:"build,omitempty"`
	Round      int    `json:"round"`
	Partitions int    `json:"partitions"`
	Segments   int    `json:"segments_per_partition"`
	// FilesOnDisk counts the segment files (*.log) after producing.
	FilesOnDisk int `json:"segment_files_on_disk"`
	// Open files of the node (/proc/PID/fd): after producing, after a SIGTERM
	// restart (at /readyz), and after a consumer read every record back.
	OpenAfterProduce int `json:"open_files_after_produce"`
	OpenAfterRestart int `json:"open_files_after_restart"`
	OpenAfterConsume int `json:"open_files_after_consume"`
	// Consumed counts the records read back (partitions x segments when all are).
	Consumed int `json:"records_consumed"`
	// Error is the first failure (EMFILE where the node runs out of descriptors).
	Error string `json:"error,omitempty"`
}

// measureSegmentFiles creates count partitions whose segments roll at every
// batch (internal.segment.bytes 1), gives each of them segments batches of one
// record (segments files per partition), and counts the node's open files at
// rest after producing, after a restart and after reading everything back.
func measureSegmentFiles(ctx context.Context, cfg config, segments int) (res segFilesResult, err error) {
	res.Partitions, res.Segments = cfg.partitions, segments
	n, err := newNode(cfg.bin, cfg.work+"/data")
	if err != nil {
		return res, err
	}
	n.extra = cfg.extra
	if _, err := n.start(ctx); err != nil {
		return res, err
	}
	defer func() {
		if n.cmd.ProcessState == nil {
			_, _ = n.stop(syscall.SIGKILL)
		}
	}()
	one := "1"
	topics, err := createTopics(ctx, n.kafka, cfg.partitions, &result{}, map[string]*string{"internal.segment.bytes": &one})
	if err != nil {
		return res, err
	}
	fail := func(err error) { // the first failure is the result; the counts go on
		if err != nil && res.Error == "" {
			res.Error = err.Error()
		}
	}
	fail(produceRounds(ctx, n.kafka, topics, segments))
	files, err := filepath.Glob(filepath.Join(n.data, "topics", "*", "*.log"))
	if err != nil {
		return res, err
	}
	res.FilesOnDisk = len(files)
	st, err := n.stat()
	if err != nil {
		return res, err
	}
	res.OpenAfterProduce = st.fds
	if _, err := n.stop(syscall.SIGTERM); err != nil {
		return res, err
	}
	_, err = n.start(ctx)
	fail(err)
	if st, err = n.stat(); err != nil {
		return res, err
	}
	res.OpenAfterRestart = st.fds
	res.Consumed, err = consumeAll(ctx, n.kafka, topics, cfg.partitions*segments)
	fail(err)
	if st, err = n.stat(); err != nil {
		return res, err
	}
	res.OpenAfterConsume = st.fds
	_, err = n.stop(syscall.SIGTERM)
	return res, err
}

// produceRounds sends rounds records to every partition, one per partition per
// round, each round acknowledged before the next: one batch each.
func produceRounds(ctx context.Context, addr string, topics map[string]int32, rounds int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.MaxBufferedRecords(64<<10))
	if err != nil {
		return err
	}
	defer cl.Close()
	for r := range rounds {
		var recs []*kgo.Record
		for t, n := range topics {
			for p := range n {
				recs = append(recs, &kgo.Record{Topic: t, Partition: p, Value: fmt.Appendf(nil, "%d", r)})
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		err := cl.ProduceSync(pctx, recs...).FirstErr()
		cancel()
		if err != nil {
			return fmt.Errorf("produce round %d: %w", r, err)
		}
	}
	return nil
}

// consumeAll reads every topic from its start until want records came or
// nothing new came for 30 s, and returns how many it read.
func consumeAll(ctx context.Context, addr string, topics map[string]int32, want int) (int, error) {
	var names []string
	for t := range topics {
		names = append(names, t)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(names...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	got := 0
	var firstErr error
	for got < want {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if pctx.Err() != nil && fs.NumRecords() == 0 {
			return got, fmt.Errorf("consumed %d of %d records: nothing more within 30 s (first fetch error: %v)", got, want, firstErr)
		}
		fs.EachError(func(t string, p int32, err error) {
			if firstErr == nil && err != context.DeadlineExceeded {
				firstErr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		got += fs.NumRecords()
	}
	return got, firstErr
}
