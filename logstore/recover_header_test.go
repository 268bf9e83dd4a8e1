package logstore_test

import (
	"errors"
	"maps"
	"testing"

	"skiff/logstore"
)

// TestRecoverDamagedFirstHeader: a segment checked from an index entry below the
// recovery point (the active one after an unclean stop) whose first batch header
// is damaged, in bytes that were synced, fails Open with a CorruptionError at
// position 0 of that file and changes no file. (Open used to panic here.)
func TestRecoverDamagedFirstHeader(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		dir := t.TempDir()
		cfg := crashCfg()
		_, locs := crashedLog(t, env, dir, cfg)
		files := segmentFiles(t, dir)
		active := files[len(files)-1]
		if locs[len(locs)-8].pos < 4096 || locs[len(locs)-8].file != active {
			t.Fatalf("test setup: the active segment holds no synced batches with an index entry: %v", locs[len(locs)-8])
		}
		patchFile(t, active, 16, []byte{1}) // magic of the first batch
		before := dirState(t, dir)

		l, err := logstore.Open(dir, cfg, env.Index())
		if err == nil {
			l.Close()
			t.Fatal("Open served a segment whose first batch header is damaged")
		}
		var ce *logstore.CorruptionError
		if !errors.As(err, &ce) || ce.File != active || ce.Pos != 0 {
			t.Fatalf("Open: %v; want a CorruptionError at position 0 of %s", err, active)
		}
		if after := dirState(t, dir); !maps.Equal(before, after) {
			t.Fatalf("Open changed the files of a log it refused: %v, then %v", before, after)
		}
	})
}
