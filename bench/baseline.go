package bench

// The baseline (skiff bench baseline): what this machine does without a broker,
// measured the way a broker works, so that broker figures can be read as ratios of
// it:
//
//   - page-cache write: sequential 1 MiB writes into a new file in --dir, no sync
//     (a broker appending to a segment);
//   - fdatasync write: the same with fdatasync after every 1 MiB (a broker that
//     syncs before acknowledging, with group commit of about that size);
//   - loopback TCP: one stream of 1 MiB writes from a goroutine to another over
//     127.0.0.1 (what a producer can push into a socket here);
//   - bare receivers: that stream received into a file with read+write, and with
//     splice (Linux): the floor of a broker's produce path (receiver.go);
//   - bare replication: that stream received into a file by a leader that sends
//     each write's bytes with sendfile to two followers, each receiving them into
//     a file of its own: the floor of RF 3 on one machine, and its ratio to the
//     read+write receiver (replication.go); only when asked for
//     (BaselineOptions), as it writes many times the others' bytes;
//   - sendfile: the page-cache file sent whole over loopback with sendfile(2)
//     (the zero-copy Fetch path);
//   - copy: the same file with pread and write through a 1 MiB buffer (the Fetch
//     path without sendfile; on loopback it is often the faster one).
//
// Every step moves the same number of bytes, and says what the thread doing its
// work (the writer, the receiver, the sender; for bare replication the leader's
// and both followers' threads together) cost in CPU per GB.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"time"
)

const (
	// BaselineChunk is the size of each write of the baseline, and the least it moves.
	BaselineChunk   = 1 << 20
	minBaseBytes    = 64 << 20
	maxBaseBytes    = 4 << 30
	baselineTimeout = 10 * time.Minute
)

// RunBaseline measures this machine's limits moving n bytes each (the bare
// replication as opts say), with its files in dir, and prints the result to
// out: each row as it is measured, or with asJSON one JSON object at the end.
func RunBaseline(ctx context.Context, dir string, n int64, opts BaselineOptions, asJSON bool, out io.Writer) error {
	var rowOut io.Writer
	if !asJSON {
		rowOut = out
		fmt.Fprintf(rowOut, "baseline  %.0f MB each, disk in %s\n", float64(n)/mb, dir)
	}
	res, err := MeasureBaseline(ctx, dir, n, opts, rowOut)
	if err != nil {
		return err
	}
	if asJSON {
		return res.writeJSON(out)
	}
	return nil
}

// baselineVolume is the bytes a baseline moves next to a run that moved n:
// the same, within [64 MiB, 4 GiB].
func baselineVolume(n int64) int64 { return min(max(n, minBaseBytes), maxBaseBytes) }

// BaselineResult is the machine's limits measured in one run.
type BaselineResult struct {
	Dir   string        `json:"dir"`
	Bytes int64         `json:"bytes"`
	Rows  []BaselineRow `json:"rows"`
	// FdatasyncP50Ms is the median time of one 1 MiB write plus fdatasync.
	FdatasyncP50Ms float64 `json:"fdatasync_p50_ms"`
	// BareReplicationRatio is the bare replication's CPU per GB over the read+write
	// receiver's, measured in pairs (replicationPairs): what RF 3 on one machine costs against one
	// node at the floor, the ratio a broker's RF 3 against one node is judged by
	// (0: not measured).
	BareReplicationRatio float64 `json:"bare_replication_ratio,omitempty"`
	// BareReplicationRatios are the ratios of the pairs of runs (the bare
	// replication and the read+write receiver just before it) whose median
	// BareReplicationRatio is.
	BareReplicationRatios []float64 `json:"bare_replication_ratios,omitempty"`
}

// BaselineRow is one measurement of a baseline.
type BaselineRow struct {
	Name     string  `json:"name"`
	Desc     string  `json:"description"`
	MBPerSec float64 `json:"mb_per_sec"`
	Seconds  float64 `json:"seconds"`
	// CPUSecondsPerGB is the CPU time of the thread that did the measured side's
	// work (the writer, the sender, the receiver) per 10^9 bytes moved; 0: not
	// measured.
	CPUSecondsPerGB float64 `json:"cpu_seconds_per_gb,omitempty"`
	// LeaderCPUSecondsPerGB and FollowersCPUSecondsPerGB split bare_replication's
	// CPU per GB: the leader's thread, and the two followers' threads together.
	LeaderCPUSecondsPerGB    float64 `json:"leader_cpu_seconds_per_gb,omitempty"`
	FollowersCPUSecondsPerGB float64 `json:"followers_cpu_seconds_per_gb,omitempty"`
	// Bytes is what this row moved when not the baseline's bytes (bare
	// replication, at most 1 GiB); 0: the baseline's.
	Bytes int64 `json:"bytes,omitempty"`
}

func (b *BaselineResult) writeJSON(w io.Writer) error {
	j, err := json.Marshal(b)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", j)
	return err
}

// add records a row that moved b.Bytes in d, with cpu of its measured thread
// (0: not measured).
func (b *BaselineResult) add(name, desc string, d, cpu time.Duration, out io.Writer) {
	row := BaselineRow{Name: name, Desc: desc, Seconds: d.Seconds()}
	if d > 0 {
		row.MBPerSec = float64(b.Bytes) / mb / d.Seconds()
	}
	if b.Bytes > 0 {
		row.CPUSecondsPerGB = cpu.Seconds() / (float64(b.Bytes) / gb)
	}
	b.Rows = append(b.Rows, row)
	if out != nil {
		fmt.Fprintf(out, "  %-50s %8.1f MB/s  (%.2f s)%s\n", desc, row.MBPerSec, row.Seconds, row.cpuText())
	}
}

// maxReplicationBytes bounds what the bare replication and its receiver runs
// move: the replication holds three files of it at once.
const maxReplicationBytes = 1 << 30

// BaselineOptions are what a baseline measures beyond its fixed rows.
type BaselineOptions struct {
	// Replication adds the bare replication row: three pairs of runs that write
	// four times its bytes each, and a warm-up file before each pair, so it is
	// measured only where something is compared with it (skiff bench baseline,
	// and produce or e2e into a replicated topic).
	Replication bool
	// WarmUp is the bytes of the file written and removed before each pair;
	// 0: the pair's bytes, at most maxDefaultWarmUp.
	WarmUp int64
}

// maxDefaultWarmUp bounds the default warm-up: with three pairs the warm-ups
// write at most 768 MiB in all unless BaselineOptions.WarmUp asks for more.
const maxDefaultWarmUp = 256 << 20

// warmUpBytes is the warm-up before each pair of runs of rn bytes.
func (o BaselineOptions) warmUpBytes(rn int64) int64 {
	if o.WarmUp > 0 {
		return o.WarmUp
	}
	return min(rn, maxDefaultWarmUp)
}

// warmPageCache writes n bytes of buf into a new file in dir and removes it,
// leaving that much page cache just freed for the next writes to reuse (a
// variable: tests see what is asked of it).
var warmPageCache = func(dir string, buf []byte, n int64) error {
	if n <= 0 {
		return nil
	}
	f, err := os.CreateTemp(dir, ".skiff-bench-warm-*.tmp")
	if err != nil {
		return fmt.Errorf("create warm-up file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	_, _, err = writeFile(f, buf, n, false)
	return err
}

// replicationPairs is how many times the bare replication and, before each, the
// read+write receiver are measured for the ratio of the two.
const replicationPairs = 3

// replicationPair is one bare replication run and the read+write receiver's run
// just before it.
type replicationPair struct {
	receiver receiverRun
	run      replicationRun
}

// addReplication records the bare replication row from the median (by CPU) of
// pairs' runs, each of which moved n bytes, its split between the leader and the
// followers, and its ratio to the read+write receiver: the median of the pairs'
// ratios.
func (b *BaselineResult) addReplication(pairs []replicationPair, n int64, out io.Writer) {
	if len(pairs) == 0 {
		return
	}
	runs := make([]replicationRun, len(pairs))
	for i, p := range pairs {
		runs[i] = p.run
		if p.receiver.cpu > 0 {
			b.BareReplicationRatios = append(b.BareReplicationRatios, p.run.cpu().Seconds()/p.receiver.cpu.Seconds())
		}
	}
	slices.SortFunc(runs, func(x, y replicationRun) int { return cmp.Compare(x.cpu(), y.cpu()) })
	run := runs[len(runs)/2]
	row := BaselineRow{Name: "bare_replication", Desc: "bare replication: receiver + sendfile to 2 followers", Seconds: run.d.Seconds()}
	if run.d > 0 {
		row.MBPerSec = float64(n) / mb / run.d.Seconds()
	}
	if n > 0 {
		row.CPUSecondsPerGB = run.cpu().Seconds() / (float64(n) / gb)
		row.LeaderCPUSecondsPerGB = run.leader.Seconds() / (float64(n) / gb)
		row.FollowersCPUSecondsPerGB = (run.followers[0] + run.followers[1]).Seconds() / (float64(n) / gb)
	}
	if n != b.Bytes {
		row.Bytes = n
	}
	b.Rows = append(b.Rows, row)
	if rs := b.BareReplicationRatios; len(rs) > 0 {
		sorted := slices.Sorted(slices.Values(rs))
		b.BareReplicationRatio = sorted[len(sorted)/2]
	}
	if out != nil {
		fmt.Fprintf(out, "  %-50s %8.1f MB/s  (%.2f s)%s\n", row.Desc, row.MBPerSec, row.Seconds, row.cpuText())
		if row.CPUSecondsPerGB > 0 {
			fmt.Fprintf(out, "  %-50s %8.2f leader, %.2f followers\n", fmt.Sprintf("  its CPU per GB (median of %d runs of %.0f MB)", len(pairs), float64(n)/mb),
				row.LeaderCPUSecondsPerGB, row.FollowersCPUSecondsPerGB)
		}
		if b.BareReplicationRatio > 0 {
			fmt.Fprintf(out, "  %-50s %8.2f x  %.2f\n", "  its CPU per GB / the read+write receiver's", b.BareReplicationRatio, b.BareReplicationRatios)
		}
	}
}

// cpuText is the row's CPU per GB for the text output ("" when not measured).
func (row BaselineRow) cpuText() string {
	if row.CPUSecondsPerGB <= 0 {
		return ""
	}
	return fmt.Sprintf("  %.2f s CPU per GB", row.CPUSecondsPerGB)
}

// MeasureBaseline runs every measurement with n bytes (the bare replication
// only with opts.Replication), writing its files in dir. Each row is printed to
// out as it is measured when out is not nil.
func MeasureBaseline(ctx context.Context, dir string, n int64, opts BaselineOptions, out io.Writer) (*BaselineResult, error) {
	res := &BaselineResult{Dir: dir, Bytes: n}
	buf := make([]byte, BaselineChunk)
	for i := range buf {
		buf[i] = 'a' + byte(i*7+i/13)%26
	}

	f, err := os.CreateTemp(dir, ".skiff-bench-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create baseline file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var d time.Duration
	cpu, err := onThread(func() (err error) {
		d, _, err = writeFile(f, buf, n, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	res.add("page_cache_write", "page-cache write (1 MiB writes, no sync)", d, cpu, out)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	if d, err = loopback(func(c net.Conn) error { return writeStream(c, buf, n) }); err != nil {
		return nil, fmt.Errorf("loopback TCP: %w", err)
	}
	res.add("loopback_tcp", "loopback TCP stream (1 MiB writes)", d, 0, out)

	// The bare receivers: what a broker's produce path cannot go below.
	for _, r := range bareReceivers() {
		run, err := bareReceive(dir, buf, n, r.recv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.desc, err)
		}
		res.add(r.name, r.desc, run.d, run.cpu, out)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}

	if opts.Replication {
		if err := measureReplication(ctx, res, dir, buf, opts, out); err != nil {
			return nil, err
		}
	}

	// The sending thread's CPU of the two ways to serve a cached file: what a
	// broker's consume path cannot go below.
	if d, cpu, err = sendOnThread(func(c net.Conn) error { return sendFileTo(c, f, n) }); err != nil {
		return nil, fmt.Errorf("sendfile over loopback: %w", err)
	}
	res.add("sendfile_loopback", "sendfile of the cached file over loopback", d, cpu, out)

	if d, cpu, err = sendOnThread(func(c net.Conn) error { return copyFileTo(c, f, n, buf) }); err != nil {
		return nil, fmt.Errorf("copy over loopback: %w", err)
	}
	res.add("copy_loopback", "read+write copy of it over loopback", d, cpu, out)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Write the first file back before the synced run, so it does not pay for it.
	if err := fdatasync(f); err != nil {
		return nil, fmt.Errorf("sync baseline file: %w", err)
	}
	f.Close()
	os.Remove(f.Name())
	g, err := os.CreateTemp(dir, ".skiff-bench-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create baseline file: %w", err)
	}
	defer os.Remove(g.Name())
	defer g.Close()
	var syncs *histogram
	cpu, err = onThread(func() (err error) {
		d, syncs, err = writeFile(g, buf, n, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	res.add("fdatasync_write", "write + fdatasync every 1 MiB", d, cpu, out)
	res.FdatasyncP50Ms = ms(syncs.quantile(0.5))
	if out != nil {
		fmt.Fprintf(out, "  %-50s %8.2f ms\n", "1 MiB write + fdatasync, median", res.FdatasyncP50Ms)
	}
	return res, nil
}

// measureReplication adds the bare replication row: what RF 3 on one machine
// cannot go below, against the read+write receiver. A single pair of runs is
// too noisy for a ratio here (the kernel's receive work of loopback lands on
// whichever thread is in the kernel), so each is run replicationPairs times,
// alternating. Before each pair a file is written and removed, so that the runs
// write into pages the kernel has just freed: on a VM that hands free memory
// back to its host (virtio-balloon free page reporting), the first write into a
// page returned to the host costs several times the copy itself, and the
// replication, writing three times the bytes, would otherwise pay it for more of
// its pages than the receiver (docs/performance.md). The pair needs four times
// its bytes of such pages; by default the warm-up frees only its bytes, at most
// 256 MiB (BaselineOptions.WarmUp asks for more). The replication keeps three
// files of its bytes at once: at most maxReplicationBytes each.
func measureReplication(ctx context.Context, res *BaselineResult, dir string, buf []byte, opts BaselineOptions, out io.Writer) error {
	rn := min(res.Bytes, maxReplicationBytes)
	var pairs []replicationPair
	for range replicationPairs {
		if err := warmPageCache(dir, buf, opts.warmUpBytes(rn)); err != nil {
			return err
		}
		var p replicationPair
		var err error
		if p.receiver, err = bareReceive(dir, buf, rn, readWriteReceive); err != nil {
			return fmt.Errorf("bare receiver: %w", err)
		}
		if p.run, err = bareReplicate(dir, buf, rn, nil); err != nil {
			return fmt.Errorf("bare replication: %w", err)
		}
		pairs = append(pairs, p)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	res.addReplication(pairs, rn, out)
	return nil
}

// writeFile writes n bytes to f in chunks of buf, with fdatasync after each when
// sync is set (the histogram holds the write+sync times).
func writeFile(f *os.File, buf []byte, n int64, sync bool) (time.Duration, *histogram, error) {
	var h histogram
	start := time.Now()
	for left := n; left > 0; {
		chunk := buf[:min(left, int64(len(buf)))]
		t := time.Now()
		if _, err := f.Write(chunk); err != nil {
			return 0, nil, fmt.Errorf("write baseline file: %w", err)
		}
		if sync {
			if err := fdatasync(f); err != nil {
				return 0, nil, fmt.Errorf("fdatasync baseline file: %w", err)
			}
			h.record(int64(time.Since(t)))
		}
		left -= int64(len(chunk))
	}
	return time.Since(start), &h, nil
}

// loopback connects a goroutine pair over 127.0.0.1, runs send on the client
// end, and returns the time until the other end has read everything send wrote
// and seen the end of the stream.
func loopback(send func(net.Conn) error) (time.Duration, error) {
	return loopbackTo(send, func(c net.Conn) (int64, error) {
		return io.CopyBuffer(io.Discard, readerOnly{c}, make([]byte, BaselineChunk))
	})
}

// sendOnThread is loopback with send locked to its thread, and that thread's CPU.
func sendOnThread(send func(net.Conn) error) (d, cpu time.Duration, err error) {
	d, err = loopback(func(c net.Conn) error {
		var serr error
		cpu, serr = onThread(func() error { return send(c) })
		return serr
	})
	return d, cpu, err
}

// loopbackTo is loopback with recv reading the accepted end until the end of the
// stream.
func loopbackTo(send func(net.Conn) error, recv func(net.Conn) (int64, error)) (time.Duration, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	type result struct {
		n   int64
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(baselineTimeout))
		n, err := recv(c)
		got <- result{n, err}
	}()
	c, err := net.DialTimeout("tcp", l.Addr().String(), 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(baselineTimeout))
	start := time.Now()
	serr := send(c)
	if cerr := c.(*net.TCPConn).CloseWrite(); serr == nil {
		serr = cerr
	}
	r := <-got
	d := time.Since(start)
	if err := errors.Join(serr, r.err); err != nil {
		return 0, err
	}
	return d, nil
}

// readerOnly hides WriteTo so that io.CopyBuffer uses the buffer.
type readerOnly struct{ io.Reader }

func writeStream(w io.Writer, buf []byte, n int64) error {
	for left := n; left > 0; {
		chunk := buf[:min(left, int64(len(buf)))]
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		left -= int64(len(chunk))
	}
	return nil
}

// copyFileTo sends n bytes of f with pread and write through buf.
func copyFileTo(w io.Writer, f *os.File, n int64, buf []byte) error {
	m, err := io.CopyBuffer(writerOnly{w}, io.NewSectionReader(f, 0, n), buf)
	if err == nil && m != n {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// writerOnly hides ReadFrom so that io.CopyBuffer copies (and no sendfile).
type writerOnly struct{ io.Writer }
