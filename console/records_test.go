package console

import (
	"bytes"
	"testing"

	"skiff/internal/batch"
)

// memLog is a partition's log in memory: batches of perBatch records of valueSize
// bytes each, offsets from 0, read as a leader answers (whole batches from the one
// holding offset, up to maxBytes but at least one, none at or past hwm).
type memLog struct {
	batches [][]byte
	hwm     int64
}

func newMemLog(records, perBatch, valueSize int, hwm int64) *memLog {
	l := &memLog{hwm: hwm}
	for base := 0; base < records; base += perBatch {
		var recs []batch.Record
		for range min(perBatch, records-base) {
			recs = append(recs, batch.Record{Value: bytes.Repeat([]byte("v"), valueSize)})
		}
		b := batch.Build(1000, recs)
		batch.SetBaseOffset(b, int64(base))
		l.batches = append(l.batches, b)
	}
	return l
}

func (l *memLog) read(offset, maxBytes int64) (Batches, error) {
	out := Batches{HWM: l.hwm}
	for _, b := range l.batches {
		h, _ := batch.ParseHeader(b)
		if h.LastOffset() < offset || h.BaseOffset >= l.hwm {
			continue
		}
		if len(out.Data) > 0 && int64(len(out.Data)+len(b)) > maxBytes {
			break
		}
		out.Data = append(out.Data, b...)
	}
	return out, nil
}

// TestReadRecords: a page never holds a record at or past the high watermark
// (even from a batch that straddles it), at most limit records, and stops at
// maxPageBytes of batches.
func TestReadRecords(t *testing.T) {
	l := newMemLog(100, 10, 10, 95)
	recs, next, capped, err := readRecords(l.read, 3, l.hwm, maxPageRecords)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 92 || recs[0].Offset != 3 || recs[len(recs)-1].Offset != 94 || capped {
		t.Errorf("offsets 3 to hwm 95: %d records, %d to %d, capped %v; want 92, 3 to 94, not capped",
			len(recs), recs[0].Offset, recs[len(recs)-1].Offset, capped)
	}
	if next < 95 {
		t.Errorf("next offset %d, want at least the high watermark 95", next)
	}

	l = newMemLog(1000, 50, 1, 1000)
	recs, next, capped, err = readRecords(l.read, 0, l.hwm, maxPageRecords)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != maxPageRecords || next != maxPageRecords || !capped {
		t.Errorf("1,000 records: a page of %d, next %d, capped %v; want %d, %d, capped", len(recs), next, capped, maxPageRecords, maxPageRecords)
	}

	l = newMemLog(100, 1, 256<<10, 100) // 256 KiB a record and a batch
	recs, next, capped, err = readRecords(l.read, 0, l.hwm, maxPageRecords)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || len(recs) >= maxPageBytes/(256<<10) || !capped || next != int64(len(recs)) {
		t.Errorf("256 KiB records: a page of %d (fewer than %d fit in 4 MiB with their batch headers), next %d, capped %v", len(recs), maxPageBytes/(256<<10), next, capped)
	}

	l = newMemLog(3, 1, maxPageBytes+1, 3) // one record alone is over the budget
	recs, _, _, err = readRecords(l.read, 0, l.hwm, maxPageRecords)
	if err != nil || len(recs) != 1 {
		t.Errorf("records over 4 MiB: a page of %d (%v), want the first alone", len(recs), err)
	}
}
