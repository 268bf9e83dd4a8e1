package logstore

import (
	"cmp"
	"fmt"
	"slices"
)

// Recovery decides before it acts. readSegments (recover_read.go) reads the
// directory, the index and as much of each segment file as deciding needs;
// planRecovery, a pure function of that, says which files to keep, cut and
// delete; applyRecovery (recover.go) carries the plan out. See
// docs/format/segment.md, "Recovery".

// segmentState is what recovery read of one segment file, as plain data.
type segmentState struct {
	base     int64 // base offset, from the file name
	read     bool  // the file was read (readSegments reads no file the plan cannot need)
	fileSize int64 // bytes in the file
	size     int64 // bytes of whole, valid, contiguous batches from the start: fileSize unless damaged
	next     int64 // offset after the last of those batches (base when there is none)
	checked  bool  // read batch by batch, not trusted from the index: fdatasynced before it is recorded
	damage   error // why the bytes from size on are not valid batches (nil when size == fileSize)
	swap     bool  // the file is <base>.log.swap, standing for the segment files it covers
}

// endsAt reports whether s is undamaged and the file with base offset next
// continues it.
func (s segmentState) endsAt(next int64) bool { return s.size == s.fileSize && s.next == next }

// recoveryInput is everything planRecovery decides from.
type recoveryInput struct {
	files         []segmentState // every segment file in the directory, ascending base offset, swaps standing for what they cover (finishSwaps)
	replaced      []int64        // segment files a swap covers, ascending
	cleaned       []int64        // leftover .cleaned files of rewrites not committed
	recoveryPoint int64          // persisted: every batch below it was fsynced
	logStart      int64          // persisted log start offset
}

// cutAt is a damaged segment file and the position it is cut at.
type cutAt struct {
	base, pos, fileSize int64
	damage              error
}

// recoveryPlan is what recovery does, in this order: reset the index, remove
// cleaned, finish the swaps (remove replaced, fsync the directory, rename swaps,
// fsync the directory), remove expired, stop with err, remove unfollow and
// fsync the directory, cut, remove stale, create, fdatasync sync, fsync the
// directory (unless nothing was removed and nothing newly recorded as synced).
type recoveryPlan struct {
	resetIndex bool    // no segment file: a new log, whatever the index holds is left over from an older one
	cleaned    []int64 // .cleaned files of rewrites that never reached their commit point: removed
	replaced   []int64 // segment files covered by a swap, last one first: removed before the swaps are renamed
	swaps      []int64 // .swap files renamed to their segment files
	expired    []int64 // files wholly below the log start offset (a retention pass stopped before unlinking them), oldest first
	err        error   // ErrSegmentMissing: offsets that were synced are missing; nothing after expired is done
	keep       []int64 // files the log consists of, ascending
	unfollow   []int64 // files that no longer follow the kept ones, last one first: removed before the cut
	lostTail   bool    // unfollow is due to the unsynced end of the last kept file being lost, not to damage
	cut        *cutAt  // the damaged file (the last one read), cut at its last valid batch
	stale      []int64 // files read whose batches all lie below the log start offset, oldest first
	create     bool    // a new empty segment is created at logStart (stale or no files: nothing kept)
	sync       []int64 // kept files that were checked: fdatasynced before they are recorded
	logStart   int64   // the log start offset from now on
}

// removes reports whether p removes or renames segment files without a directory
// fsync of its own after them (unfollow and create have one).
func (p recoveryPlan) removes() bool {
	return len(p.cleaned) > 0 || len(p.replaced) > 0 || len(p.swaps) > 0 || len(p.expired) > 0 ||
		len(p.stale) > 0 || p.cut != nil
}

// planRecovery decides what recovery does with the segment files in.files. Of
// the files below the log start offset, and of those after the first file that
// does not end where the next one begins, it needs only the base offset; it
// panics if a file it needs was not read. readSegments reads exactly those.
func planRecovery(in recoveryInput) recoveryPlan {
	if len(in.files) == 0 {
		return recoveryPlan{resetIndex: true, create: true, cleaned: in.cleaned}
	}
	p := recoveryPlan{cleaned: in.cleaned}
	for i := len(in.replaced) - 1; i >= 0; i-- {
		p.replaced = append(p.replaced, in.replaced[i])
	}
	for _, f := range in.files {
		if f.swap {
			p.swaps = append(p.swaps, f.base)
		}
	}
	n := countExpired(in.files, in.logStart)
	for _, f := range in.files[:n] {
		p.expired = append(p.expired, f.base)
	}
	files := in.files[n:]
	var kept []segmentState
	for i, f := range files {
		if i > 0 {
			if prev := kept[len(kept)-1]; f.base != prev.next {
				if prev.next > f.base || prev.next < in.recoveryPoint {
					// prev is whole (a damaged one ends the loop below) and the missing
					// offsets were synced, so a file is missing or misnamed: serving the
					// log would show a hole, and removing the later files would lose
					// their records. Leave it all as it is.
					p.err = missingSegment(prev, f.base)
					return p
				}
				// prev ends early, at or above the recovery point: it lost a tail that
				// was never synced while the next file's directory entry survived (a
				// power failure can do that). As after damage, the later files go.
				p.unfollow, p.lostTail = reversedBases(files[i:]), true
				break
			}
		}
		if !f.read {
			panic(fmt.Sprintf("logstore: recovery planned with segment %d unread", f.base))
		}
		kept = append(kept, f)
		if f.size < f.fileSize {
			// The later files no longer follow this one. They go before the cut, so
			// that a crash in between leaves damage the next recovery finds again,
			// never a whole segment followed by a hole.
			p.unfollow = reversedBases(files[i+1:])
			p.cut = &cutAt{base: f.base, pos: f.size, fileSize: f.fileSize, damage: f.damage}
			break
		}
	}
	if kept[len(kept)-1].next < in.logStart {
		// Nothing (readable) left at or above the log start offset: start empty there.
		for _, f := range kept {
			p.stale = append(p.stale, f.base)
		}
		p.create, p.logStart = true, in.logStart
		return p
	}
	for _, f := range kept {
		p.keep = append(p.keep, f.base)
		if f.checked {
			p.sync = append(p.sync, f.base)
		}
	}
	p.logStart = max(in.logStart, kept[0].base)
	return p
}

// finishSwaps returns the segment files a log consists of once the swaps of
// interrupted rewrites are finished: each swap (read, so its end is known)
// stands for the segment files whose base offsets lie in its range, which are
// the replaced ones; they are returned too.
func finishSwaps(bases []int64, swaps []segmentState) (files []segmentState, replaced []int64) {
	for _, base := range bases {
		if slices.ContainsFunc(swaps, func(s segmentState) bool { return s.base <= base && base < max(s.next, s.base+1) }) {
			replaced = append(replaced, base)
			continue
		}
		files = append(files, segmentState{base: base})
	}
	files = append(files, swaps...)
	slices.SortFunc(files, func(a, b segmentState) int { return cmp.Compare(a.base, b.base) })
	return files, replaced
}

// countExpired returns how many of the first files lie wholly below logStart:
// each is followed by a file whose base offset is at most logStart.
func countExpired(files []segmentState, logStart int64) int {
	n := 0
	for n+1 < len(files) && files[n+1].base <= logStart {
		n++
	}
	return n
}

// trustMeta reports whether the index's metadata m of the segment file with base
// offset base (of fileSize bytes) can be believed without reading the file: it
// matches the file, it is known to be on disk (closed, or wholly below the
// recovery point rp), and it ends where the next file (base offset next, or -1
// if none) begins. Its first batch header must still be checked.
func trustMeta(m SegmentMeta, base, fileSize, rp, next int64) bool {
	return m.BaseOffset == base && m.Size == fileSize && (m.Closed || m.NextOffset <= rp) &&
		m.NextOffset >= base && (m.Size == 0) == (m.NextOffset == base) &&
		(next < 0 || m.NextOffset == next)
}

func missingSegment(prev segmentState, base int64) error {
	if base < prev.next {
		return fmt.Errorf("%w: %s ends at offset %d, but the next segment file is %s, which overlaps it", ErrSegmentMissing,
			segmentName(prev.base), prev.next, segmentName(base))
	}
	return fmt.Errorf("%w: %s ends at offset %d, but the next segment file is %s: offsets %d..%d are missing (restore the missing segment, or remove the files from %s on to give up their records)",
		ErrSegmentMissing, segmentName(prev.base), prev.next, segmentName(base), prev.next, base-1, segmentName(base))
}

func reversedBases(files []segmentState) []int64 {
	var bases []int64
	for i := len(files) - 1; i >= 0; i-- {
		bases = append(bases, files[i].base)
	}
	return bases
}
