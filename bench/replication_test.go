package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
	"testing"
	"time"
)

// TestBareReplication: the leader and both followers of the bare replication end
// with exactly the stream in their files, each thread's CPU is measured, the files
// are removed, and the baseline row carries the split and the ratio.
func TestBareReplication(t *testing.T) {
	n := int64(3*BaselineChunk + 12345) // not a whole number of chunks
	buf := make([]byte, BaselineChunk)
	for i := range buf {
		buf[i] = byte(i * 31 / 7)
	}
	want := bytes.Repeat(buf, 4)[:n]
	dir := t.TempDir()
	checked := false
	run, err := bareReplicate(dir, buf, n, func(leader *os.File, followers [2]*os.File) {
		checked = true
		for i, f := range []*os.File{leader, followers[0], followers[1]} {
			data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
			if err != nil || !bytes.Equal(data, want) {
				t.Errorf("file %d: %d of %d bytes, equal %v (%v)", i, len(data), n, bytes.Equal(data, want), err)
			}
		}
	})
	if err != nil || !checked {
		t.Fatalf("%+v %v (checked %v)", run, err, checked)
	}
	if run.d <= 0 || (threadCPU() > 0 && (run.leader <= 0 || run.followers[0] <= 0 || run.followers[1] <= 0)) {
		t.Errorf("run %+v", run)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %v", left)
	}

	// Three pairs: the row is the median run by CPU (6 s: 3 s leader, 1+2 s
	// followers), the ratio the median of 6/2, 9/1 and 4/2.
	res := &BaselineResult{Bytes: n}
	res.add("bare_receiver_read_write", "r", time.Second, 2*time.Second, nil)
	pair := func(recv, leader, f1, f2 time.Duration) replicationPair {
		return replicationPair{receiverRun{time.Second, recv}, replicationRun{time.Second, leader, [2]time.Duration{f1, f2}}}
	}
	res.addReplication([]replicationPair{
		pair(2*time.Second, 3*time.Second, time.Second, 2*time.Second),
		pair(time.Second, 5*time.Second, 2*time.Second, 2*time.Second),
		pair(2*time.Second, 2*time.Second, time.Second, time.Second),
	}, n, io.Discard)
	row := res.Rows[1]
	perGB := float64(n) / gb
	if row.Name != "bare_replication" || !near(row.CPUSecondsPerGB, 6/perGB) || !near(row.LeaderCPUSecondsPerGB, 3/perGB) ||
		!near(row.FollowersCPUSecondsPerGB, 3/perGB) || !near(res.BareReplicationRatio, 3) || len(res.BareReplicationRatios) != 3 {
		t.Errorf("row %+v, ratio %v %v", row, res.BareReplicationRatio, res.BareReplicationRatios)
	}
	if row.Bytes != 0 {
		t.Errorf("row of the baseline's bytes says %d", row.Bytes)
	}
	// Fewer bytes than the baseline's (capped at maxReplicationBytes): the row says
	// so, and its CPU per GB is per its own bytes.
	capped := &BaselineResult{Bytes: 2 * n}
	capped.addReplication([]replicationPair{pair(2*time.Second, 3*time.Second, time.Second, 2*time.Second)}, n, nil)
	if r := capped.Rows[0]; r.Bytes != n || !near(r.CPUSecondsPerGB, 6/perGB) {
		t.Errorf("capped row %+v", r)
	}
}

func near(a, b float64) bool { return a > b*0.999 && a < b*1.001 }

// recordWarmUps makes warmPageCache record what it is asked to write, and
// still write it, for the rest of the test.
func recordWarmUps(t *testing.T) *[]int64 {
	var asked []int64
	warm := warmPageCache
	warmPageCache = func(dir string, buf []byte, n int64) error {
		asked = append(asked, n)
		return warm(dir, buf, n)
	}
	t.Cleanup(func() { warmPageCache = warm })
	return &asked
}

// TestMeasureBaselineReplication: a whole baseline has the bare replication row
// after the bare receivers, its ratio from three pairs each after a warm-up of
// its bytes, its text lines, and leaves no file behind.
func TestMeasureBaselineReplication(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	warmUps := recordWarmUps(t)
	res, err := MeasureBaseline(t.Context(), dir, 2*BaselineChunk, BaselineOptions{Replication: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{2 * BaselineChunk, 2 * BaselineChunk, 2 * BaselineChunk}; !slices.Equal(*warmUps, want) {
		t.Errorf("warm-ups %v, want %v", *warmUps, want)
	}
	var names []string
	var repl BaselineRow
	for _, r := range res.Rows {
		names = append(names, r.Name)
		if r.Name == "bare_replication" {
			repl = r
		}
	}
	if repl.Name == "" || names[len(names)-4] != "bare_replication" {
		t.Fatalf("rows %v", names)
	}
	if threadCPU() > 0 && (repl.CPUSecondsPerGB <= 0 || len(res.BareReplicationRatios) != replicationPairs ||
		res.BareReplicationRatio <= 0 || !near(repl.LeaderCPUSecondsPerGB+repl.FollowersCPUSecondsPerGB, repl.CPUSecondsPerGB)) {
		t.Errorf("row %+v, ratio %v %v", repl, res.BareReplicationRatio, res.BareReplicationRatios)
	}
	if !bytes.Contains(out.Bytes(), []byte("bare replication: receiver + sendfile to 2 followers")) {
		t.Errorf("text output:\n%s", out.String())
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %v", left)
	}

	// Not asked for: no row, no ratio, no warm-up.
	*warmUps = nil
	out.Reset()
	res, err = MeasureBaseline(t.Context(), dir, BaselineChunk, BaselineOptions{}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Name == "bare_replication" {
			t.Errorf("row %+v not asked for", r)
		}
	}
	if res.BareReplicationRatio != 0 || res.BareReplicationRatios != nil || len(*warmUps) != 0 ||
		bytes.Contains(out.Bytes(), []byte("bare replication")) {
		t.Errorf("ratio %v %v, warm-ups %v, text:\n%s", res.BareReplicationRatio, res.BareReplicationRatios, *warmUps, out.String())
	}
	j, err := json.Marshal(res)
	if err != nil || bytes.Contains(j, []byte("bare_replication")) {
		t.Errorf("JSON %s (%v)", j, err)
	}
}

// TestWarmUpBytes: the warm-up before each pair is the pair's bytes, at most
// 256 MiB, unless the options ask for a size; with three pairs of the largest
// runs the default writes at most 768 MiB in all.
func TestWarmUpBytes(t *testing.T) {
	for _, tc := range []struct {
		rn, asked, want int64
	}{
		{2 << 20, 0, 2 << 20},
		{100 << 20, 0, 100 << 20},
		{maxReplicationBytes, 0, 256 << 20},
		{min(baselineVolume(64<<30), maxReplicationBytes), 0, 256 << 20},
		{maxReplicationBytes, 4 << 30, 4 << 30},
		{2 << 20, 8 << 20, 8 << 20},
	} {
		if got := (BaselineOptions{Replication: true, WarmUp: tc.asked}).warmUpBytes(tc.rn); got != tc.want {
			t.Errorf("warm-up of runs of %d asked %d: %d, want %d", tc.rn, tc.asked, got, tc.want)
		}
	}
	if total := replicationPairs * (BaselineOptions{}).warmUpBytes(maxReplicationBytes); total > 768<<20 {
		t.Errorf("default warm-ups write %d in all", total)
	}
}

// TestBaselineOptionsOfRun: a run's baseline has the bare replication row only
// for produce and e2e into a replicated topic, with the run's warm-up.
func TestBaselineOptionsOfRun(t *testing.T) {
	for _, tc := range []struct {
		mode Mode
		rf   int
		want bool
	}{
		{Produce, 1, false}, {Produce, 3, true}, {Produce, 2, true}, {E2E, 3, true}, {E2E, 1, false},
		{Consume, 3, false}, {Consume, 0, false},
	} {
		cfg := Config{Mode: tc.mode, Baseline: true, BaselineWarmUp: 5 << 20}
		got := cfg.baselineOptions(&Result{Mode: tc.mode, ReplicationFactor: tc.rf})
		if got.Replication != tc.want || got.WarmUp != 5<<20 {
			t.Errorf("%s into RF %d: %+v, want replication %v", tc.mode, tc.rf, got, tc.want)
		}
	}
}
