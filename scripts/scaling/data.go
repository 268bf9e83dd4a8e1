package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	// What the restarted process did from its start to /readyz, from
	// /proc/PID/io and /proc/PID/stat: ReadMB is every byte its read and pread
	// calls returned (rchar: page cache or disk), DiskReadMB what it made the
	// kernel fetch from the disk (read_bytes), CPUSeconds its utime+stime.
	ReadMB     float64 `json:"read_mb"`
	DiskReadMB float64 `json:"disk_read_mb"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// TailMB is what the light produce had acknowledged when the node was killed.
	TailMB float64 `json:"tail_acked_mb"`
	// After the rounds, on the files of a last SIGKILL: the log's recovery
	// (logstore.Open) and the bytes it read, and the scan of every batch header
	// (what rebuilt producer state at open before producer snapshots).
	OpenSeconds float64 `json:"log_open_seconds"`
	OpenReadMB  float64 `json:"log_open_read_mb"`
	ScanSeconds float64 `json:"header_scan_seconds"`
	Batches     int     `json:"batches"`
}

const dataTopic, dataRecordSize = "data", 64 << 10

// dataOptions are the data mode's settings.
type dataOptions struct {
	gb        float64
	segments  int
	rounds    int
	tailRate  float64 // MB/s of the light produce during which the node is killed
	minFreeGB float64 // the disk's free space may not go below this
}

// measureData fills one partition with gb GB in segments segments (at least
// 1 MiB each, segment.bytes' minimum; 64 KiB records, franz-go's defaults otherwise),
// then for each round and build: produces lightly (o.tailRate) for two
// seconds, kills the node with SIGKILL while that produce runs, starts that
// build on the data and times /readyz.
func measureData(ctx context.Context, cfg config, builds []struct{ name, bin string }, o dataOptions) ([]dataResult, error) {
	total := int64(o.gb * 1e9)
	if free, err := freeBytes(cfg.work); err != nil {
		return nil, err
	} else if need := total + int64(o.minFreeGB*1e9) + 1e9; free < need {
		return nil, fmt.Errorf("%s has %.1f GB free: %g GB of data would leave less than %g GB", cfg.work, float64(free)/1e9, o.gb, o.minFreeGB)
	}
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
	segBytes := max(total/int64(o.segments), 1<<20) // segment.bytes' minimum
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
	began := time.Now()
	if _, err := produceData(ctx, n.kafka, total, 0, func() error { return checkFree(cfg.work, o.minFreeGB) }); err != nil {
		return nil, err
	}
	log.Printf("%g GB written in %.0f s", o.gb, time.Since(began).Seconds())
	var out []dataResult
	for r := 1; r <= o.rounds; r++ {
		for i := range builds {
			b := builds[(i+r-1)%len(builds)]
			tail, err := killDuringProduce(ctx, n, o.tailRate, 2*time.Second)
			if err != nil {
				return out, err
			}
			n.bin = b.bin
			d, err := n.start(ctx)
			if err != nil {
				return out, err
			}
			res := dataResult{Build: b.name, GB: o.gb, Segments: o.segments, Round: r, ReadySeconds: d.Seconds(), TailMB: float64(tail) / 1e6}
			if io, err := n.io(); err == nil {
				res.ReadMB, res.DiskReadMB = float64(io.rchar)/1e6, float64(io.readBytes)/1e6
			}
			if st, err := n.stat(); err == nil {
				res.CPUSeconds = float64(st.cpuTicks) / ticksPerSecond
			}
			out = append(out, res)
		}
	}
	// What opening costs, by part: after a last SIGKILL, the log's recovery
	// (logstore.Open) and a scan of every batch header, timed here on the files.
	if _, err := killDuringProduce(ctx, n, o.tailRate, 2*time.Second); err != nil {
		return out, err
	}
	parts, err := openParts(n.data)
	if err != nil {
		return out, err
	}
	for i := range out {
		out[i].OpenSeconds, out[i].OpenReadMB, out[i].ScanSeconds, out[i].Batches = parts.open, parts.openReadMB, parts.scan, parts.batches
	}
	return out, nil
}

// killDuringProduce produces at rate MB/s for d, then kills the node with
// SIGKILL while the produce goes on, and returns the bytes acknowledged.
func killDuringProduce(ctx context.Context, n *node, rate float64, d time.Duration) (int64, error) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type produced struct {
		acked int64
		err   error
	}
	done := make(chan produced, 1)
	go func() {
		acked, err := produceRate(pctx, n.kafka, rate)
		done <- produced{acked, err}
	}()
	select {
	case p := <-done:
		return 0, fmt.Errorf("light produce: %v", p.err)
	case <-time.After(d):
	}
	if _, err := n.stop(syscall.SIGKILL); err != nil {
		return 0, err
	}
	cancel()
	p := <-done
	return p.acked, nil
}

// produceRate sends 64 KiB records to the data topic at rate MB/s until ctx
// ends, and returns the bytes acknowledged. An error other than ctx's ending
// is returned at once.
func produceRate(ctx context.Context, addr string, rate float64) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	value := make([]byte, dataRecordSize)
	var acked atomic.Int64
	failed := make(chan error, 1)
	t := time.NewTicker(time.Duration(float64(time.Second) * dataRecordSize / (rate * 1e6)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return acked.Load(), nil
		case err := <-failed:
			return acked.Load(), err
		case <-t.C:
		}
		cl.Produce(ctx, &kgo.Record{Topic: dataTopic, Value: value}, func(_ *kgo.Record, err error) {
			switch {
			case err == nil:
				acked.Add(dataRecordSize)
			case ctx.Err() == nil:
				select {
				case failed <- err:
				default:
				}
			}
		})
	}
}

type openCost struct {
	open, openReadMB, scan float64
	batches                int
}

// openParts opens the data partition's log as a node would, then scans every
// batch header, and times both; it counts the bytes the open read (this
// process's rchar).
func openParts(data string) (openCost, error) {
	var c openCost
	db, err := offsets.Open(filepath.Join(data, "meta"), offsets.Options{})
	if err != nil {
		return c, err
	}
	defer db.Close()
	key := dataTopic + "-0"
	before, err := readIO("self")
	if err != nil {
		return c, err
	}
	began := time.Now()
	l, err := logstore.Open(filepath.Join(data, "topics", key), logstore.Config{}, db.LogIndex(key))
	if err != nil {
		return c, err
	}
	defer l.Close()
	c.open = time.Since(began).Seconds()
	after, err := readIO("self")
	if err != nil {
		return c, err
	}
	c.openReadMB = float64(after.rchar-before.rchar) / 1e6
	began = time.Now()
	err = l.ScanHeaders(l.LogStartOffset(), func(batch.Header) error { c.batches++; return nil })
	c.scan = time.Since(began).Seconds()
	return c, err
}

func ptr[T any](v T) *T { return &v }

// produceData sends 64 KiB records to the data topic until bytes were
// acknowledged (bytes > 0) or for d, and returns the bytes acknowledged. With
// check, it calls check after every GB acknowledged and stops with its error.
func produceData(ctx context.Context, addr string, bytes int64, d time.Duration, check func() error) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(256))
	if err != nil {
		return 0, err
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
	checked := int64(0)
	for ctx.Err() == nil && (bytes <= 0 || acked.Load() < bytes) {
		if err, ok := failed.Load().(error); ok {
			return acked.Load(), err
		}
		if a := acked.Load(); check != nil && a-checked >= 1e9 {
			checked = a
			if err := check(); err != nil {
				return a, err
			}
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
		return acked.Load(), cl.Flush(ctx)
	}
	return acked.Load(), nil
}

// freeBytes returns the free bytes of the file system holding dir.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// checkFree fails once dir's file system has less than gb GB free.
func checkFree(dir string, gb float64) error {
	free, err := freeBytes(dir)
	if err != nil {
		return err
	}
	if float64(free) < gb*1e9 {
		return fmt.Errorf("%s has %.1f GB free, below the %g GB to keep", dir, float64(free)/1e9, gb)
	}
	return nil
}

// procIO is what /proc/PID/io says.
type procIO struct{ rchar, readBytes int64 }

// readIO reads /proc/PID/io (pid "self" for this process).
func readIO(pid string) (procIO, error) {
	var io procIO
	b, err := os.ReadFile("/proc/" + pid + "/io")
	if err != nil {
		return io, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "rchar":
			io.rchar = n
		case "read_bytes":
			io.readBytes = n
		}
	}
	return io, nil
}

func (n *node) io() (procIO, error) { return readIO(strconv.Itoa(n.cmd.Process.Pid)) }
