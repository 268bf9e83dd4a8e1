package replication

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTxnNoticeStamps: a notice holds only at the leader epoch and the
// producer's current marker stamp; the next marker voids it and it cannot be
// noted again; reopening the partition forgets every stamp, and later markers
// get stamps never seen before.
func TestTxnNoticeStamps(t *testing.T) {
	dir := t.TempDir()
	m, db := newManager(t, dir)
	if err := m.Apply(1, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	marker := func() uint64 {
		t.Helper()
		if _, err := p.WriteMarker(7, 0, false, 0, false); err != nil {
			t.Fatal(err)
		}
		s, _ := p.MarkerStamp(7)
		return s
	}
	if p.NoteTxn(7, 0, 0, p.LeaderEpoch()) {
		t.Fatal("a notice without a stamp was kept")
	}
	s1 := marker()
	le := p.LeaderEpoch()
	if s1 == 0 || p.NoteTxn(7, 0, s1, le+1) || p.NoteTxn(7, 0, s1+1, le) {
		t.Fatalf("stamp %d: a notice at another leader epoch or stamp was kept", s1)
	}
	if !p.NoteTxn(7, 0, s1, le) {
		t.Fatal("a notice at the current stamp was refused")
	}
	if _, ok := p.TxnNoticed(7, 1); ok {
		t.Fatal("the notice covers another producer epoch")
	}
	if _, ok := p.TxnNoticed(8, 0); ok {
		t.Fatal("the notice covers another producer")
	}
	guard, ok := p.TxnNoticed(7, 0)
	if !ok {
		t.Fatal("the notice is not seen")
	}
	s2 := marker() // comes before the noticed batch
	if s2 <= s1 {
		t.Fatalf("stamps %d then %d", s1, s2)
	}
	_, err := p.AppendVerified(txnBatch(7, 0, 0, "late"), 1, guard)
	wantCode(t, "batch noticed before a marker", err, kerr.InvalidTxnState)
	if _, ok := p.TxnNoticed(7, 0); ok || p.NoteTxn(7, 0, s1, le) {
		t.Fatal("the notice outlived the marker")
	}
	if !p.NoteTxn(7, 0, s2, le) {
		t.Fatal("a notice at the new stamp was refused")
	}
	guard, _ = p.TxnNoticed(7, 0)
	if _, err := p.AppendVerified(txnBatch(7, 0, 0, "noticed"), 1, guard); err != nil {
		t.Fatalf("noticed batch: %v", err)
	}
	closeAll(t, m, db)

	m, db = newManager(t, dir)
	defer closeAll(t, m, db)
	if err := m.Apply(2, []TopicSpec{spec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	p = m.Partition("t", 0)
	if s, _ := p.MarkerStamp(7); s != 0 || p.NoteTxn(7, 0, s2, p.LeaderEpoch()) {
		t.Fatalf("after reopening: stamp %d, or the old stamp's notice kept", s)
	}
	if s3 := marker(); s3 <= s2 {
		t.Fatalf("stamp after reopening %d, not above %d", s3, s2)
	}
}
