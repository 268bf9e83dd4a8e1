package logstore_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// openModes returns the access mode (os.O_RDONLY, os.O_WRONLY or os.O_RDWR) of
// each of this process's descriptors of files in dir, by file path.
func openModes(t *testing.T, dir string) map[string][]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	modes := map[string][]int{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasPrefix(target, dir+string(filepath.Separator)) {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
				if err != nil {
					t.Fatalf("fdinfo %s: %q: %v", e.Name(), line, err)
				}
				modes[target] = append(modes[target], int(flags)&(os.O_RDONLY|os.O_WRONLY|os.O_RDWR))
			}
		}
	}
	return modes
}

// TestReopenedSegmentsReadOnly: a sealed segment file that the cache closed is
// opened again read-only by the readers that need it; only the active segment
// is open for writing.
func TestReopenedSegmentsReadOnly(t *testing.T) {
	l, cache, dir, want := cachedLog(t, 2, 400, 7)
	for _, a := range want {
		if got, _ := readAll(t, l, a.base, 1, math.MaxInt64); !bytes.Equal(got, a.raw) {
			t.Fatalf("Read(%d) returned the wrong bytes", a.base)
		}
	}
	if cache.Reopened() == 0 {
		t.Fatal("no segment file was opened again")
	}
	segs := l.Segments()
	active := filepath.Join(dir, fmt.Sprintf("%020d.log", segs[len(segs)-1].Base))
	sealed := 0
	for path, modes := range openModes(t, dir) {
		for _, m := range modes {
			switch {
			case path == active && m != os.O_RDWR:
				t.Errorf("active segment %s open with mode %d, want read-write", path, m)
			case path != active && m != os.O_RDONLY:
				t.Errorf("sealed segment %s opened again with mode %d, want read-only", path, m)
			case path != active:
				sealed++
			}
		}
	}
	if sealed == 0 {
		t.Fatal("no sealed segment file open to check")
	}
}

// TestReopenOfVanishedSegment: a segment file that the cache closed and that
// then disappeared from the directory (removed behind the log's back) is an
// error to read, and is not created again, empty, by the attempt.
func TestReopenOfVanishedSegment(t *testing.T) {
	l, cache, dir, _ := cachedLog(t, 1, 300, 8)
	segs := l.Segments()
	for _, s := range segs[1:4] { // the first segment's file is closed by now
		readAll(t, l, s.Base, 1, math.MaxInt64)
	}
	if cache.Evicted() == 0 {
		t.Fatal("no file was evicted")
	}
	path := filepath.Join(dir, fmt.Sprintf("%020d.log", segs[0].Base))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if s, err := l.Read(segs[0].Base, 1, math.MaxInt64); err == nil {
		var b bytes.Buffer
		_, err = s.WriteTo(&b)
		s.Release()
		if err == nil {
			t.Fatalf("Read of a removed segment returned %d bytes and no error", b.Len())
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("reading the removed segment left a file in its place: %v", err)
	}
}

// TestTruncateIntoReopenedSegment: a truncation into a sealed segment whose
// file a reader opened again read-only (idle in the cache, or still held by a
// Slice) makes it the active segment, open for writing: appends and syncs work,
// the Slice still reads what it held, and no descriptor is left behind.
func TestTruncateIntoReopenedSegment(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			l, cache, dir, want := cachedLog(t, 1, 300, 9)
			segs := l.Segments()
			m := segs[len(segs)/2]
			var cut int // first batch of m after its first
			for i, a := range want {
				if a.base > m.Base && a.base < m.Next {
					cut = i
					break
				}
			}
			if cut == 0 {
				t.Fatalf("segment %+v has a single batch", m)
			}
			for _, s := range segs[:len(segs)/2+1] { // m's file is closed and opened again, read-only
				readAll(t, l, s.Base, 1, math.MaxInt64)
			}
			if cache.Reopened() == 0 {
				t.Fatal("no segment file was opened again")
			}
			var before bytes.Buffer
			if held {
				s, err := l.Read(m.Base, math.MaxInt64, want[cut].base)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Release()
				if _, err := s.WriteTo(&before); err != nil {
					t.Fatal(err)
				}
				if err := l.Truncate(want[cut].base); err != nil {
					t.Fatal(err)
				}
				var after bytes.Buffer
				if _, err := s.WriteTo(&after); err != nil || !bytes.Equal(before.Bytes(), after.Bytes()) {
					t.Fatalf("held slice after the truncation: %d then %d bytes, %v", before.Len(), after.Len(), err)
				}
				s.Release()
			} else if err := l.Truncate(want[cut].base); err != nil {
				t.Fatal(err)
			}
			want = want[:cut]
			b := makeBatch(t, 2, 100, 5_000)
			if _, err := l.Append(b, 1); err != nil {
				t.Fatalf("append after truncating into a reopened segment: %v", err)
			}
			if err := l.Sync(); err != nil {
				t.Fatalf("sync after truncating into a reopened segment: %v", err)
			}
			want = append(want, appendedOf(t, b))
			checkLog(t, l, want)
			if n, fds := cache.OpenFiles(), openFilesUnder(t, dir); n > 2 || int64(fds) != n {
				t.Fatalf("cache counts %d open files, the process holds %d descriptors; want the same, at most 2", n, fds)
			}
			for path, modes := range openModes(t, dir) {
				if path == filepath.Join(dir, fmt.Sprintf("%020d.log", m.Base)) && (len(modes) != 1 || modes[0] != os.O_RDWR) {
					t.Fatalf("active segment %s open with modes %v, want one read-write", path, modes)
				}
			}
		})
	}
}
