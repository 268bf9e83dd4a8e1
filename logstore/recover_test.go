package logstore_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"skiff/internal/batch"
	"skiff/internal/syncbuf"
	"skiff/logstore"
)

// loc is where a batch lives on disk.
type loc struct {
	file string
	pos  int64
}

func locate(tb testing.TB, l *logstore.Log, want []appended) []loc {
	tb.Helper()
	locs := make([]loc, len(want))
	for i, a := range want {
		s, err := l.Read(a.base, 1, math.MaxInt64)
		if err != nil {
			tb.Fatal(err)
		}
		locs[i] = loc{file: s.Ranges[0].File.(interface{ Name() string }).Name(), pos: s.Ranges[0].Pos}
		s.Release()
	}
	return locs
}

func patchFile(tb testing.TB, path string, pos int64, b []byte) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, pos); err != nil {
		tb.Fatal(err)
	}
}

func appendFile(tb testing.TB, path string, b []byte) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		tb.Fatal(err)
	}
}

func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// checkIndex verifies every recorded segment and the last offset entry of each:
// nothing past the log end, and each entry points at the batch it names.
func checkIndex(tb testing.TB, idx logstore.Index, dir string, end int64) {
	tb.Helper()
	metas, err := idx.Segments()
	if err != nil {
		tb.Fatal(err)
	}
	files := segmentFiles(tb, dir)
	if len(metas) != len(files) {
		tb.Fatalf("index records %d segments, %d files", len(metas), len(files))
	}
	for _, m := range metas {
		path := filepath.Join(dir, fmt.Sprintf("%020d.log", m.BaseOffset))
		if m.NextOffset > end || m.Size != fileSize(tb, path) {
			tb.Fatalf("segment meta %+v does not match the file (size %d) or log end %d", m, fileSize(tb, path), end)
		}
		for _, probe := range []int64{math.MaxInt64, m.BaseOffset + (m.NextOffset-m.BaseOffset)/2} {
			e, ok, err := idx.LookupOffset(m.BaseOffset, probe)
			if err != nil {
				tb.Fatal(err)
			}
			if !ok {
				continue
			}
			if e.Offset >= end || e.Pos >= m.Size {
				tb.Fatalf("index entry %+v of segment %d past the end (log end %d, size %d)", e, m.BaseOffset, end, m.Size)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				tb.Fatal(err)
			}
			h, err := batch.ParseHeader(raw[e.Pos:])
			if err != nil || h.BaseOffset != e.Offset {
				tb.Fatalf("index entry %+v points at base offset %d (%v)", e, h.BaseOffset, err)
			}
		}
	}
}

// crashedLog appends 60 batches to a log with 16 KiB segments, syncs before the
// last 8, and abandons it without Close. It returns what was appended and where.
func crashedLog(t *testing.T, env indexEnv, dir string, cfg logstore.Config) ([]appended, []loc) {
	l := openLog(t, dir, cfg, env.Index())
	rng := rand.New(rand.NewPCG(42, 43))
	want := appendN(t, l, rng, 52, 5, 1_000_000)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	want = append(want, appendN(t, l, rng, 8, 5, 2_000_000)...)
	locs := locate(t, l, want)
	l.Crash()
	// The damage cases need the last batches, which follow the Sync, in the active
	// segment, with index entries among them.
	if active := segmentFiles(t, dir); locs[len(locs)-8].file != active[len(active)-1] || locs[len(locs)-8].pos < 4096 {
		t.Fatalf("test setup: the last 8 batches are not all in the active segment past 4 KiB: %v", locs[len(locs)-8:])
	}
	return want, locs
}

// crashCfg has the segment size that crashedLog expects.
func crashCfg() logstore.Config {
	return logstore.Config{SegmentBytes: 24 << 10, IndexIntervalBytes: 512, RetentionMs: -1}
}

// TestRecoverCorruption is the corruption table (after Prometheus'
// TestWALRepair_ReadingError): each kind of damage after an unclean stop is cut
// off at the last valid batch before it, with every earlier batch intact, the
// index agrees, and the log takes appends again.
func TestRecoverCorruption(t *testing.T) {
	type damage func(t *testing.T, want []appended, locs []loc) (keep int, pos int64)
	at := func(k int, fn func(t *testing.T, a appended, l loc)) damage {
		return func(t *testing.T, want []appended, locs []loc) (int, int64) {
			k := len(want) + k
			fn(t, want[k], locs[k])
			return k, locs[k].pos
		}
	}
	setLength := func(n int32) func(t *testing.T, a appended, l loc) {
		return func(t *testing.T, a appended, l loc) {
			patchFile(t, l.file, l.pos+8, binary.BigEndian.AppendUint32(nil, uint32(n)))
		}
	}
	cases := map[string]damage{
		"torn tail": at(-1, func(t *testing.T, a appended, l loc) {
			if err := os.Truncate(l.file, l.pos+int64(len(a.raw))/2); err != nil {
				t.Fatal(err)
			}
		}),
		"torn header": at(-1, func(t *testing.T, a appended, l loc) {
			if err := os.Truncate(l.file, l.pos+20); err != nil {
				t.Fatal(err)
			}
		}),
		"bad crc": at(-3, func(t *testing.T, a appended, l loc) {
			patchFile(t, l.file, l.pos+int64(len(a.raw))-1, []byte{^a.raw[len(a.raw)-1]})
		}),
		"bad length huge":     at(-3, setLength(0x7fff0000)),
		"bad length small":    at(-3, setLength(5)),
		"bad length negative": at(-3, setLength(-1)),
		"bad length overlaps next": at(-3, func(t *testing.T, a appended, l loc) {
			setLength(int32(len(a.raw)-batch.LogOverhead+61))(t, a, l)
		}),
		"bad magic": at(-2, func(t *testing.T, a appended, l loc) {
			patchFile(t, l.file, l.pos+16, []byte{1})
		}),
		"base offset going back": at(-2, func(t *testing.T, a appended, l loc) {
			patchFile(t, l.file, l.pos, binary.BigEndian.AppendUint64(nil, uint64(a.base-1)))
		}),
		"zeroed region": at(-4, func(t *testing.T, a appended, l loc) {
			patchFile(t, l.file, l.pos+30, make([]byte, 4096))
		}),
		"zeroed to end": at(-4, func(t *testing.T, a appended, l loc) {
			size := fileSize(t, l.file)
			patchFile(t, l.file, l.pos, make([]byte, size-l.pos))
		}),
		"garbage appended": func(t *testing.T, want []appended, locs []loc) (int, int64) {
			last := locs[len(locs)-1].file
			size := fileSize(t, last)
			g := make([]byte, 300)
			r := rand.New(rand.NewPCG(1, 1))
			for i := range g {
				g[i] = byte(r.Uint32())
			}
			appendFile(t, last, g)
			return len(want), size
		},
		"zeros appended": func(t *testing.T, want []appended, locs []loc) (int, int64) {
			last := locs[len(locs)-1].file
			size := fileSize(t, last)
			appendFile(t, last, make([]byte, 8192))
			return len(want), size
		},
		"valid batch appended with offsets going back": func(t *testing.T, want []appended, locs []loc) (int, int64) {
			last := locs[len(locs)-1].file
			size := fileSize(t, last)
			b := makeBatch(t, 2, 10, 5)
			batch.SetBaseOffset(b, want[len(want)-1].next-1)
			appendFile(t, last, b)
			return len(want), size
		},
	}
	for _, kind := range indexKinds {
		for name, corrupt := range cases {
			t.Run(kind.name+"/"+name, func(t *testing.T) {
				env := kind.mk(t)
				dir := t.TempDir()
				var logs syncbuf.Buffer
				cfg := crashCfg()
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				want, locs := crashedLog(t, env, dir, cfg)
				keep, pos := corrupt(t, want, locs)

				l := openLog(t, dir, cfg, env.Index())
				want = want[:keep]
				checkLog(t, l, want)
				checkIndex(t, env.Index(), dir, l.LogEndOffset())
				if out := logs.String(); !strings.Contains(out, "truncating damaged segment") ||
					!strings.Contains(out, fmt.Sprintf("position=%d", pos)) {
					t.Fatalf("recovery did not log the truncation at position %d:\n%s", pos, out)
				}
				want = append(want, appendN(t, l, rand.New(rand.NewPCG(5, 5)), 10, 3, 3_000_000)...)
				checkLog(t, l, want)
				closeLog(t, l)
				l = openLog(t, dir, cfg, env.Index())
				checkLog(t, l, want)
				closeLog(t, l)
			})
		}
	}
}

// TestRecoverTornClosedSegment: a rolled segment that is shorter than recorded is
// checked and cut, and the later segments, which no longer follow it, are removed.
func TestRecoverTornClosedSegment(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		dir := t.TempDir()
		cfg := crashCfg()
		want, locs := crashedLog(t, env, dir, cfg)
		files := segmentFiles(t, dir)
		k := slices_index(locs, func(l loc) bool { return l.file == files[1] }) + 2
		if err := os.Truncate(locs[k].file, locs[k].pos+10); err != nil {
			t.Fatal(err)
		}
		l := openLog(t, dir, cfg, env.Index())
		defer closeLog(t, l)
		checkLog(t, l, want[:k])
		if got := segmentFiles(t, dir); len(got) != 2 {
			t.Fatalf("segments after recovery: %v, want the first two", got)
		}
		checkIndex(t, env.Index(), dir, l.LogEndOffset())
	})
}

func slices_index(locs []loc, f func(loc) bool) int {
	for i, l := range locs {
		if f(l) {
			return i
		}
	}
	return -1
}

// TestRecoverIndexWiped: with the index lost entirely, it is rebuilt from the
// segments and every answer is the same as before.
func TestRecoverIndexWiped(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			forEachIndex(t, func(t *testing.T, env indexEnv) {
				dir := t.TempDir()
				l := openLog(t, dir, smallCfg(), env.Index())
				want := appendN(t, l, rand.New(rand.NewPCG(50, 51)), 150, 6, 1_000_000)
				checkLog(t, l, want)
				if clean {
					closeLog(t, l)
				} else {
					l.Crash()
				}
				env.Wipe(t)
				l = openLog(t, dir, smallCfg(), env.Index())
				defer closeLog(t, l)
				checkLog(t, l, want)
				checkIndex(t, env.Index(), dir, l.LogEndOffset())
				if m, ok := env.Index().(*logstore.MemIndex); ok && m.EntryCount() < 20 {
					t.Fatalf("index not rebuilt: %d entries", m.EntryCount())
				}
			})
		})
	}
}

// TestRecoverStaleIndex: an older snapshot of the index (as if Pebble lost its
// latest writes) gives the same answers after reopen.
func TestRecoverStaleIndex(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			forEachIndex(t, func(t *testing.T, env indexEnv) {
				dir := t.TempDir()
				rng := rand.New(rand.NewPCG(60, 61))
				l := openLog(t, dir, smallCfg(), env.Index())
				want := appendN(t, l, rng, 40, 6, 1_000_000)
				closeLog(t, l)
				restore := env.Snapshot(t)
				l = openLog(t, dir, smallCfg(), env.Index())
				want = append(want, appendN(t, l, rng, 80, 6, 2_000_000)...)
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
				if clean {
					closeLog(t, l)
				} else {
					l.Crash()
				}
				restore()
				l = openLog(t, dir, smallCfg(), env.Index())
				defer closeLog(t, l)
				checkLog(t, l, want)
				checkIndex(t, env.Index(), dir, l.LogEndOffset())
			})
		})
	}
}

// TestRecoverBadEntries: index entries past a segment's end, or pointing at the
// wrong place, do not change any answer.
func TestRecoverBadEntries(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		dir := t.TempDir()
		l := openLog(t, dir, smallCfg(), env.Index())
		want := appendN(t, l, rand.New(rand.NewPCG(70, 71)), 100, 6, 1_000_000)
		closeLog(t, l)
		metas, err := env.Index().Segments()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metas {
			idx := env.Index()
			for _, e := range []logstore.IndexEntry{
				{Offset: m.NextOffset + 3, Pos: m.Size + 100, MaxTimestampBefore: 5_000_000},
				{Offset: m.BaseOffset + 1, Pos: 7, MaxTimestampBefore: 0}, // not a batch boundary
			} {
				if err := idx.PutEntry(m.BaseOffset, e); err != nil {
					t.Fatal(err)
				}
			}
		}
		l = openLog(t, dir, smallCfg(), env.Index())
		checkLog(t, l, want)
		l.Crash()
		l = openLog(t, dir, smallCfg(), env.Index())
		defer closeLog(t, l)
		checkLog(t, l, want)
	})
}

// TestCleanCloseTrustsSegments: after Close, reopening checks nothing (the
// recovery point is the log end): damage a clean restart does not look at stays.
// After an unclean stop the same damage past the recovery point is found.
func TestCleanCloseTrustsSegments(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			dir := t.TempDir()
			idx := logstore.NewMemIndex()
			l := openLog(t, dir, smallCfg(), idx)
			want := appendN(t, l, rand.New(rand.NewPCG(80, 81)), 30, 4, 1)
			locs := locate(t, l, want)
			if clean {
				closeLog(t, l)
			} else {
				l.Crash()
			}
			k := len(want) - 1
			patchFile(t, locs[k].file, locs[k].pos+int64(len(want[k].raw))-1, []byte{^want[k].raw[len(want[k].raw)-1]})
			l = openLog(t, dir, smallCfg(), idx)
			defer closeLog(t, l)
			wantEnd := want[k].base
			if clean {
				wantEnd = want[k].next
			}
			if l.LogEndOffset() != wantEnd {
				t.Fatalf("LogEndOffset = %d, want %d", l.LogEndOffset(), wantEnd)
			}
		})
	}
}

// TestCrashLosesUnsyncedTail: an unclean stop that also loses an arbitrary part of
// the unsynced tail of the active segment (rolled segments were synced when
// rolled) keeps every batch below the last Sync and recovers to a valid log.
func TestCrashLosesUnsyncedTail(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		dir := t.TempDir()
		rng := rand.New(rand.NewPCG(90, 91))
		var want []appended
		for round := range 6 {
			l := openLog(t, dir, smallCfg(), env.Index())
			checkLog(t, l, want)
			want = append(want, appendN(t, l, rng, 10+rng.IntN(20), 6, int64(round)*1_000_000)...)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			synced := l.LogEndOffset()
			want = append(want, appendN(t, l, rng, rng.IntN(15), 6, int64(round)*1_000_000+500_000)...)
			locs := locate(t, l, want)
			l.Crash()

			// Lose a random part of the active segment past the synced point.
			files := segmentFiles(t, dir)
			active := files[len(files)-1]
			from := int64(0)
			for i, a := range want {
				if locs[i].file == active && a.base < synced {
					from = locs[i].pos + int64(len(a.raw))
				}
			}
			size := fileSize(t, active)
			cut := from + rng.Int64N(size-from+1)
			if err := os.Truncate(active, cut); err != nil {
				t.Fatal(err)
			}
			keep := 0
			for i, a := range want {
				if locs[i].file < active || locs[i].file == active && locs[i].pos+int64(len(a.raw)) <= cut {
					keep = i + 1
				}
			}
			if keep < len(want) && want[keep].base < synced {
				t.Fatalf("test bug: cut %d loses synced batch %d", cut, want[keep].base)
			}
			want = want[:keep]
			l = openLog(t, dir, smallCfg(), env.Index())
			checkLog(t, l, want)
			if l.LogEndOffset() < synced {
				t.Fatalf("round %d: log end %d below the synced offset %d", round, l.LogEndOffset(), synced)
			}
			closeLog(t, l)
		}
	})
}

// TestRecoverIndexDamage extends the corruption table to the derived data and to
// whole files, after the same unclean stop as TestRecoverCorruption: an index that
// points past the end of a segment (the active one, a closed one, or with a closed
// segment's next offset wrong) changes no answer and is fixed; an index lost
// entirely is rebuilt from the segments; a segment missing between two others
// makes Open fail with ErrSegmentMissing, naming the gap, and changes no file (the
// partition is then offline, never served with a hole).
func TestRecoverIndexDamage(t *testing.T) {
	type damage func(t *testing.T, env indexEnv, dir string, metas []logstore.SegmentMeta, end int64)
	inflate := func(k func(n int) int, closed bool, dSize, dNext int64) damage {
		return func(t *testing.T, env indexEnv, dir string, metas []logstore.SegmentMeta, end int64) {
			m := metas[k(len(metas))]
			m.Size += dSize
			m.NextOffset += dNext
			m.Closed = closed
			idx := env.Index()
			if err := idx.PutSegment(m); err != nil {
				t.Fatal(err)
			}
			if err := idx.PutEntry(m.BaseOffset, logstore.IndexEntry{Offset: m.NextOffset + 50, Pos: m.Size + 3000, MaxTimestampBefore: 1}); err != nil {
				t.Fatal(err)
			}
			if err := idx.SetRecoveryPoint(end+1000, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := func(int) int { return 0 }
	last := func(n int) int { return n - 1 }
	cases := map[string]struct {
		damage  damage
		missing bool // Open must fail with ErrSegmentMissing
	}{
		"index points past the end of the active segment":  {damage: inflate(last, false, 5000, 100)},
		"index points past the end of a closed segment":    {damage: inflate(first, true, 5000, 100)},
		"closed segment recorded with a wrong next offset": {damage: inflate(first, true, 0, 7)},
		"index lost entirely": {damage: func(t *testing.T, env indexEnv, _ string, _ []logstore.SegmentMeta, _ int64) {
			env.Wipe(t)
		}},
		"segment missing in the middle": {missing: true, damage: func(t *testing.T, _ indexEnv, dir string, metas []logstore.SegmentMeta, _ int64) {
			if err := os.Remove(segmentFiles(t, dir)[1]); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, kind := range indexKinds {
		for name, tc := range cases {
			t.Run(kind.name+"/"+name, func(t *testing.T) {
				env := kind.mk(t)
				dir := t.TempDir()
				cfg := crashCfg()
				cfg.SegmentBytes = 8 << 10
				l := openLog(t, dir, cfg, env.Index())
				rng := rand.New(rand.NewPCG(42, 43))
				want := appendN(t, l, rng, 52, 5, 1_000_000)
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
				want = append(want, appendN(t, l, rng, 8, 5, 2_000_000)...)
				l.Crash()
				metas, err := env.Index().Segments()
				if err != nil {
					t.Fatal(err)
				}
				slices.SortFunc(metas, func(a, b logstore.SegmentMeta) int { return int(a.BaseOffset - b.BaseOffset) })
				if len(metas) < 3 {
					t.Fatalf("test setup: %d segments, want at least 3", len(metas))
				}
				tc.damage(t, env, dir, metas, want[len(want)-1].next)
				before := dirState(t, dir)

				l, err = logstore.Open(dir, cfg, env.Index())
				if tc.missing {
					if err == nil {
						l.Close()
						t.Fatal("Open served a log with a missing segment")
					}
					gap := fmt.Sprintf("offsets %d..%d are missing", metas[1].BaseOffset, metas[2].BaseOffset-1)
					if !errors.Is(err, logstore.ErrSegmentMissing) || !strings.Contains(err.Error(), gap) {
						t.Fatalf("Open: %v; want ErrSegmentMissing saying %q", err, gap)
					}
					if after := dirState(t, dir); !maps.Equal(before, after) {
						t.Fatalf("Open changed the files of a log it refused: %v, then %v", before, after)
					}
					return
				}
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				checkLog(t, l, want)
				checkIndex(t, env.Index(), dir, l.LogEndOffset())
				want = append(want, appendN(t, l, rand.New(rand.NewPCG(5, 5)), 10, 3, 3_000_000)...)
				closeLog(t, l)
				l = openLog(t, dir, cfg, env.Index())
				checkLog(t, l, want)
				closeLog(t, l)
			})
		}
	}
}

// dirState maps each file of dir to its size.
func dirState(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = fi.Size()
	}
	return m
}
