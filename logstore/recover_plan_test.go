package logstore

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The cases below are those the recovery loop before planRecovery handled, each
// named after the damage or leftover it meets. Files are given as what
// readSegments would have read of them.
var errBad = errors.New("bad crc")

// trusted is a whole segment file believed from its metadata.
func trusted(base, next, size int64) segmentState {
	return segmentState{base: base, read: true, fileSize: size, size: size, next: next}
}

// checked is a whole segment file read batch by batch.
func checked(base, next, size int64) segmentState {
	s := trusted(base, next, size)
	s.checked = true
	return s
}

// damaged is a segment file whose valid batches end at size, before its end.
func damaged(base, next, size, fileSize int64) segmentState {
	s := checked(base, next, size)
	s.fileSize, s.damage = fileSize, errBad
	return s
}

// unread is a file readSegments does not open.
func unread(base int64) segmentState { return segmentState{base: base} }

func TestPlanRecovery(t *testing.T) {
	cases := []struct {
		name    string
		in      recoveryInput
		want    recoveryPlan
		wantErr string // ErrSegmentMissing with this text; want then holds what is done before
	}{{
		name: "no segment file: a new log at offset 0",
		in:   recoveryInput{recoveryPoint: 70, logStart: 50},
		want: recoveryPlan{resetIndex: true, create: true},
	}, {
		name: "clean restart: everything trusted",
		in:   recoveryInput{files: []segmentState{trusted(0, 10, 100), trusted(10, 25, 150), trusted(25, 30, 60)}, recoveryPoint: 30},
		want: recoveryPlan{keep: []int64{0, 10, 25}},
	}, {
		name: "unclean stop: the active segment checked and whole",
		in:   recoveryInput{files: []segmentState{trusted(0, 10, 100), checked(10, 25, 150)}, recoveryPoint: 12},
		want: recoveryPlan{keep: []int64{0, 10}, sync: []int64{10}},
	}, {
		name: "index lost: every segment checked",
		in:   recoveryInput{files: []segmentState{checked(0, 10, 100), checked(10, 25, 150)}},
		want: recoveryPlan{keep: []int64{0, 10}, sync: []int64{0, 10}},
	}, {
		name: "empty active segment",
		in:   recoveryInput{files: []segmentState{trusted(0, 10, 100), checked(10, 10, 0)}, recoveryPoint: 10},
		want: recoveryPlan{keep: []int64{0, 10}, sync: []int64{10}},
	}, {
		// A torn tail, a bad CRC, a bad length, a zeroed page, appended garbage or a
		// batch with the wrong base offset all read as valid batches up to a position
		// short of the file's end.
		name: "damage in the active segment",
		in:   recoveryInput{files: []segmentState{trusted(0, 10, 100), damaged(10, 20, 90, 150)}, recoveryPoint: 12},
		want: recoveryPlan{keep: []int64{0, 10}, cut: &cutAt{base: 10, pos: 90, fileSize: 150, damage: errBad}, sync: []int64{10}},
	}, {
		name: "damage from the first byte of the only segment",
		in:   recoveryInput{files: []segmentState{damaged(0, 0, 0, 4096)}},
		want: recoveryPlan{keep: []int64{0}, cut: &cutAt{base: 0, pos: 0, fileSize: 4096, damage: errBad}, sync: []int64{0}},
	}, {
		name: "damage in a closed segment: the later files go, last one first, before the cut",
		in: recoveryInput{
			files:         []segmentState{trusted(0, 10, 100), damaged(10, 14, 40, 150), unread(25), unread(30)},
			recoveryPoint: 8,
		},
		want: recoveryPlan{keep: []int64{0, 10}, unfollow: []int64{30, 25}, cut: &cutAt{base: 10, pos: 40, fileSize: 150, damage: errBad}, sync: []int64{10}},
	}, {
		name: "a closed segment lost its unsynced tail: the later files go",
		in: recoveryInput{
			files:         []segmentState{trusted(0, 10, 100), checked(10, 20, 120), unread(25), unread(30)},
			recoveryPoint: 12,
		},
		want: recoveryPlan{keep: []int64{0, 10}, unfollow: []int64{30, 25}, lostTail: true, sync: []int64{10}},
	}, {
		name: "lost tail ending exactly at the recovery point",
		in:   recoveryInput{files: []segmentState{checked(0, 20, 120), unread(25)}, recoveryPoint: 20},
		want: recoveryPlan{keep: []int64{0}, unfollow: []int64{25}, lostTail: true, sync: []int64{0}},
	}, {
		// The recorded next offset of a closed segment disagreed with the next file's
		// name, so it was checked (trustMeta), and it is empty.
		name: "empty closed segment above the recovery point",
		in:   recoveryInput{files: []segmentState{trusted(0, 10, 100), checked(10, 10, 0), unread(25)}, recoveryPoint: 5},
		want: recoveryPlan{keep: []int64{0, 10}, unfollow: []int64{25}, lostTail: true, sync: []int64{10}},
	}, {
		name:    "a segment missing below the recovery point: nothing changes",
		in:      recoveryInput{files: []segmentState{trusted(0, 10, 100), checked(10, 25, 150), unread(40), unread(50)}, recoveryPoint: 45},
		wantErr: "offsets 25..39 are missing",
	}, {
		name:    "a gap just below the recovery point",
		in:      recoveryInput{files: []segmentState{checked(0, 19, 120), unread(25)}, recoveryPoint: 20},
		wantErr: "offsets 19..24 are missing",
	}, {
		name:    "overlapping segments",
		in:      recoveryInput{files: []segmentState{checked(0, 30, 120), unread(25)}},
		wantErr: "00000000000000000025.log, which overlaps it",
	}, {
		name:    "a segment missing after expired ones: the expired ones still go",
		in:      recoveryInput{files: []segmentState{unread(0), unread(10), checked(20, 25, 150), unread(40)}, recoveryPoint: 45, logStart: 22},
		want:    recoveryPlan{expired: []int64{0, 10}},
		wantErr: "offsets 25..39 are missing",
	}, {
		name: "expired segments left by retention",
		in:   recoveryInput{files: []segmentState{unread(0), unread(10), trusted(25, 30, 60), trusted(30, 40, 60)}, recoveryPoint: 40, logStart: 25},
		want: recoveryPlan{expired: []int64{0, 10}, keep: []int64{25, 30}, logStart: 25},
	}, {
		name: "log start inside the first segment",
		in:   recoveryInput{files: []segmentState{trusted(0, 10, 100), trusted(10, 25, 150)}, recoveryPoint: 25, logStart: 5},
		want: recoveryPlan{keep: []int64{0, 10}, logStart: 5},
	}, {
		name: "log start below the first segment (its index record was lost)",
		in:   recoveryInput{files: []segmentState{trusted(10, 25, 150)}, recoveryPoint: 25, logStart: 3},
		want: recoveryPlan{keep: []int64{10}, logStart: 10},
	}, {
		name: "the only segment ends below the log start: restart empty there",
		in:   recoveryInput{files: []segmentState{checked(0, 10, 100)}, logStart: 40},
		want: recoveryPlan{stale: []int64{0}, create: true, logStart: 40},
	}, {
		name: "damage leaves nothing at or above the log start",
		in:   recoveryInput{files: []segmentState{unread(0), damaged(20, 22, 30, 150), unread(40)}, recoveryPoint: 20, logStart: 25},
		want: recoveryPlan{
			expired: []int64{0}, unfollow: []int64{40}, cut: &cutAt{base: 20, pos: 30, fileSize: 150, damage: errBad},
			stale: []int64{20}, create: true, logStart: 25,
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := planRecovery(tc.in)
			if tc.wantErr != "" {
				if !errors.Is(got.err, ErrSegmentMissing) || !strings.Contains(got.err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrSegmentMissing saying %q", got.err, tc.wantErr)
				}
				got.err = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("plan\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestPlanRecoveryReadsEnough: planRecovery reads exactly the files readSegments
// reads (it panics on an unread one it needs), so the rule that stops reading
// must agree with it.
func TestPlanRecoveryReadsEnough(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("planRecovery used a file that was not read")
		}
	}()
	planRecovery(recoveryInput{files: []segmentState{trusted(0, 10, 100), unread(10)}})
}

func TestTrustMeta(t *testing.T) {
	closed := SegmentMeta{BaseOffset: 10, Size: 150, NextOffset: 25, MaxTimestamp: 7, Closed: true}
	open := closed
	open.Closed = false
	empty := SegmentMeta{BaseOffset: 10, NextOffset: 10, MaxTimestamp: -1, Closed: true}
	with := func(m SegmentMeta, f func(*SegmentMeta)) SegmentMeta { f(&m); return m }
	cases := []struct {
		name                     string
		m                        SegmentMeta
		base, fileSize, rp, next int64
		want                     bool
	}{
		{"closed, followed by the file it ends at", closed, 10, 150, 0, 25, true},
		{"closed, last file", closed, 10, 150, 0, -1, true},
		{"not closed, wholly below the recovery point", open, 10, 150, 25, -1, true},
		{"not closed, above the recovery point", open, 10, 150, 24, -1, false},
		{"file size differs", closed, 10, 151, 0, 25, false},
		{"recorded for another file", closed, 0, 150, 0, 25, false},
		// Before planRecovery, recovery trusted such a segment and stepped back to
		// check it when it met the next file.
		{"ends before the next file", closed, 10, 150, 0, 30, false},
		{"ends after the next file", closed, 10, 150, 0, 20, false},
		{"next offset below the base", with(closed, func(m *SegmentMeta) { m.NextOffset = 9 }), 10, 150, 0, -1, false},
		{"bytes but no batches", with(closed, func(m *SegmentMeta) { m.NextOffset = 10 }), 10, 150, 0, -1, false},
		{"batches but no bytes", with(closed, func(m *SegmentMeta) { m.Size = 0 }), 10, 0, 0, -1, false},
		{"empty, last file", empty, 10, 0, 0, -1, true},
		{"empty, followed by another file", empty, 10, 0, 0, 25, false},
		{"no metadata (zero value), empty file at offset 0", SegmentMeta{}, 0, 0, 0, -1, true},
		{"no metadata (zero value), file at offset 0", SegmentMeta{}, 0, 100, 0, -1, false},
	}
	for _, tc := range cases {
		if got := trustMeta(tc.m, tc.base, tc.fileSize, tc.rp, tc.next); got != tc.want {
			t.Errorf("%s: trustMeta(%+v, %d, %d, %d, %d) = %v", tc.name, tc.m, tc.base, tc.fileSize, tc.rp, tc.next, got)
		}
	}
}

// TestFinishSwaps: a .swap file stands for the segment files whose base offsets
// lie in its range (the ones its rewrite replaces, the first one included);
// files outside it are kept; and the plan removes the replaced files, last one
// first, and renames the swaps.
func TestFinishSwaps(t *testing.T) {
	swap := func(base, next, size int64) segmentState {
		s := checked(base, next, size)
		s.swap = true
		return s
	}
	files, replaced := finishSwaps([]int64{0, 10, 20, 30, 40}, []segmentState{swap(10, 30, 90)})
	if want := []int64{10, 20}; !reflect.DeepEqual(replaced, want) {
		t.Fatalf("replaced %v, want %v", replaced, want)
	}
	var bases []int64
	for _, f := range files {
		bases = append(bases, f.base)
	}
	if want := []int64{0, 10, 30, 40}; !reflect.DeepEqual(bases, want) || !files[1].swap || files[2].swap {
		t.Fatalf("files %+v", files)
	}
	// The first replaced file already gone (removed before a crash): the swap stands alone.
	files, replaced = finishSwaps([]int64{0, 20, 30}, []segmentState{swap(10, 30, 90)})
	if len(replaced) != 1 || replaced[0] != 20 || len(files) != 3 || files[1].base != 10 {
		t.Fatalf("files %+v, replaced %v", files, replaced)
	}
	in := recoveryInput{files: []segmentState{trusted(0, 10, 100), swap(10, 30, 90), trusted(30, 40, 80)},
		replaced: []int64{10, 20}, cleaned: []int64{30}, recoveryPoint: 40}
	want := recoveryPlan{cleaned: []int64{30}, replaced: []int64{20, 10}, swaps: []int64{10}, keep: []int64{0, 10, 30}, sync: []int64{10}}
	if got := planRecovery(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("plan %+v, want %+v", got, want)
	}
}
