package groups

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"skiff/internal/batch"
	"skiff/internal/syncbuf"
)

// A transaction marker the compaction cleaner emptied (a control batch with no
// records) is skipped silently when __consumer_offsets is rebuilt, and the
// records after it are still applied.
func TestRebuildSkipsEmptiedMarker(t *testing.T) {
	var logs syncbuf.Buffer
	e := newEnv(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	e.commit(7, "g", "", -1, "t", map[int32]int64{0: 5})
	marker := batch.Header{Attributes: batch.AttrTransactional | batch.AttrControl, ProducerID: 42,
		MaxTimestamp: time.Now().UnixMilli(), BaseSequence: -1}
	if _, err := e.log.Append(batch.AppendEmpty(nil, &marker), 0); err != nil {
		t.Fatal(err)
	}
	e.commit(7, "g", "", -1, "t", map[int32]int64{1: 6})

	e.stop()
	if err := removeAll(e.dir + "/meta"); err != nil {
		t.Fatal(err)
	}
	e.start()
	if got := e.fetch("g"); len(got) != 2 || got["t/0"] != 5 || got["t/1"] != 6 {
		t.Fatalf("offsets rebuilt around an emptied marker: %v", got)
	}
	if out := logs.String(); strings.Contains(out, "level=WARN") {
		t.Fatalf("rebuilding warned:\n%s", out)
	}
}
