package logstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"skiff/internal/batch"
	"skiff/logstore"
)

// TestConcurrentWritersAndReaders runs readers (Read, OffsetForTimestamp,
// ScanHeaders) against a writer that appends, syncs, truncates and applies
// retention. A read that did not overlap a Truncate must return whole valid
// batches, contiguous, starting with the batch that holds the offset asked for.
func TestConcurrentWritersAndReaders(t *testing.T) {
	forEachIndex(t, func(t *testing.T, env indexEnv) {
		cfg := smallCfg()
		cfg.RetentionBytes = 64 << 10
		l := openLog(t, t.TempDir(), cfg, env.Index())
		defer closeLog(t, l)
		var truncSeq atomic.Int64 // odd while a Truncate runs
		done := make(chan struct{})
		errs := make(chan error, 8)
		var reads atomic.Int64
		var wg sync.WaitGroup
		for r := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(r), 99))
				for {
					select {
					case <-done:
						return
					default:
					}
					start, end := l.LogStartOffset(), l.LogEndOffset()
					if end <= start {
						continue
					}
					off := start + rng.Int64N(end-start)
					seq := truncSeq.Load()
					s, err := l.Read(off, 1+rng.Int64N(8192), end)
					if errors.Is(err, logstore.ErrOffsetOutOfRange) {
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("Read(%d) with log [%d, %d), seq %d->%d: %w", off, start, end, seq, truncSeq.Load(), err)
						return
					}
					var buf bytes.Buffer
					_, werr := s.WriteTo(&buf)
					s.Release()
					if seq%2 == 1 || truncSeq.Load() != seq {
						continue // overlapped a Truncate: the caller's contract was not kept
					}
					if werr != nil {
						errs <- werr
						return
					}
					first, next := int64(-1), int64(-1)
					if err := batch.Split(buf.Bytes(), func(h batch.Header, _ []byte) error {
						if first < 0 {
							first = h.BaseOffset
							if h.BaseOffset > off || h.NextOffset() <= off {
								return errors.New("first batch does not hold the offset read")
							}
						} else if h.BaseOffset != next {
							return errors.New("batches not contiguous")
						}
						next = h.NextOffset()
						return nil
					}); err != nil || buf.Len() == 0 {
						errs <- errors.Join(err, errors.New("concurrent read returned bad batches"))
						return
					}
					if _, _, _, err := l.OffsetForTimestamp(rng.Int64N(3_000_000)); err != nil && !errors.As(err, new(*logstore.CorruptionError)) {
						errs <- fmt.Errorf("OffsetForTimestamp: %w", err)
						return
					}
					reads.Add(1)
				}
			}()
		}
		rng := rand.New(rand.NewPCG(7, 7))
		for i := range 40 {
			appendN(t, l, rng, 10, 5, int64(i)*10_000)
			switch i % 4 {
			case 1:
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
			case 2:
				end := l.LogEndOffset()
				truncSeq.Add(1)
				if err := l.Truncate(end - 5); err != nil {
					t.Fatal(err)
				}
				truncSeq.Add(1)
			case 3:
				if _, err := l.ApplyRetention(time.UnixMilli(0)); err != nil {
					t.Fatal(err)
				}
			}
		}
		close(done)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if reads.Load() == 0 {
			t.Fatal("no read completed")
		}
		if l.LogStartOffset() == 0 {
			t.Fatal("retention never ran")
		}
		for i, r := range l.Users() {
			if r != 0 {
				t.Fatalf("segment %d has %d users after all slices were released, want 0", i, r)
			}
		}
	})
}
