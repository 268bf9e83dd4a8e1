package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/batch"
	"skiff/logstore"
	"skiff/offsets"
)

// dataResult is one restart after SIGKILL of a node holding gb GB in one
// partition of segments segments.
type dataResult struct {
	Build        string  `json:"build,omitempty"`
	GB           float64 `json:"gb"`
	Segments     int     `json:"segments"`
	Round        int     `json:"round"`
	ReadySeconds float64 `json:"sigkill_ready_seconds"`
	// After the rounds, on the files of a last SIGKILL: the log's recovery, and
	// the scan of every batch header that rebuilds producer state at open.
	OpenSeconds float64 `json:"log_open_seconds"`
	ScanSeconds float64 `json:"header_scan_seconds"`
	Batches     int     `json:"batches"`
}

const dataTopic, dataRecordSize = "data", 64 << 10

// measureData fills one partition with gb GB in segments segments (at least
// 1 MiB each, segment.bytes' minimum; 64 KiB records, franz-go's defaults otherwise),
// then for each round and build: produces for two seconds, kills the node with
// SIGKILL, starts that build on the data and times /readyz.
func measureData(ctx context.Context, cfg config, builds []struct{ name, bin string }, gb float64, segments, rounds int) ([]dataResult, error) {
	n, err := newNode(builds[len(builds)-1].bin, cfg.work+"/data")
	if err != nil {
		return nil, err
	}
	if _, err := n.start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if n.cmd.ProcessState == nil {
			_, _ = n.stop(syscall.SIGKILL)
		}
	}()
	total := int64(gb * 1e9)
	segBytes := max(total/int64(segments), 1<<20) // segment.bytes' minimum
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.kafka))
	if err != nil {
		return nil, err
	}
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": ptr(strconv.FormatInt(segBytes, 10))}, dataTopic)
	cl.Close()
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", dataTopic, err)
	}
	if err := produceData(ctx, n.kafka, total, 0); err != nil {
		return nil, err
	}
	var out []dataResult
	for r := 1; r <= rounds; r++ {
		for i := range builds {
			b := builds[(i+r-1)%len(builds)]
			if err := produceData(ctx, n.kafka, 0, 2*time.Second); err != nil {
				return nil, err
			}
			if _, err := n.stop(syscall.SIGKILL); err != nil {
				return nil, err
			}
			n.bin = b.bin
			d, err := n.start(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, dataResult{Build: b.name, GB: gb, Segments: segments, Round: r, ReadySeconds: d.Seconds()})
		}
	}
	// What opening costs, by part: after a last SIGKILL, the log's recovery
	// (logstore.Open) and the header scan that rebuilds producer and
	// transaction state (replication's openPartition), timed here on the files.
	if err := produceData(ctx, n.kafka, 0, 2*time.Second); err != nil {
		return out, err
	}
	if _, err := n.stop(syscall.SIGKILL); err != nil {
		return out, err
	}
	parts, err := openParts(n.data)
	if err != nil {
		return out, err
	}
	for i := range out {
		out[i].OpenSeconds, out[i].ScanSeconds, out[i].Batches = parts.open, parts.scan, parts.batches
	}
	return out, nil
}

type openCost struct {
	open, scan float64
	batches    int
}

// openParts opens the data partition's log as a node would, then scans every
// batch header, and times both.
func openParts(data string) (openCost, error) {
	var c openCost
	db, err := offsets.Open(filepath.Join(data, "meta"), offsets.Options{})
	if err != nil {
		return c, err
	}
	defer db.Close()
	key := dataTopic + "-0"
	began := time.Now()
	l, err := logstore.Open(filepath.Join(data, "topics", key), logstore.Config{}, db.LogIndex(key))
	if err != nil {
		return c, err
	}
	defer l.Close()
	c.open = time.Since(began).Seconds()
	began = time.Now()
	err = l.ScanHeaders(l.LogStartOffset(), func(batch.Header) error { c.batches++; return nil })
	c.scan = time.Since(began).Seconds()
	return c, err
}

func ptr[T any](v T) *T { return &v }

// produceData sends 64 KiB records to the data topic until bytes were
// acknowledged (bytes > 0) or for d.
func produceData(ctx context.Context, addr string, bytes int64, d time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(256))
	if err != nil {
		return err
	}
	defer cl.Close()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	value := make([]byte, dataRecordSize)
	var acked atomic.Int64
	var failed atomic.Value
	for ctx.Err() == nil && (bytes <= 0 || acked.Load() < bytes) {
		if err, ok := failed.Load().(error); ok {
			return err
		}
		cl.Produce(ctx, &kgo.Record{Topic: dataTopic, Value: value}, func(_ *kgo.Record, err error) {
			switch {
			case err == nil:
				acked.Add(dataRecordSize)
			case ctx.Err() == nil:
				failed.Store(err)
			}
		})
	}
	if d == 0 {
		return cl.Flush(ctx)
	}
	return nil
}
