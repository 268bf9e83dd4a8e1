package replication

// Notices of a producer's transaction from its coordinator (KIP-890 part 1
// without the round trip): once the coordinator has committed that a partition
// is in a producer's transaction it tells the partition's leader, which then
// appends the producer's first batch of that transaction without asking the
// coordinator. A notice is bound to the leader epoch and to the producer's
// marker stamp here: every marker of the producer appended to this replica
// gets a new stamp, so the marker that ends the noticed transaction voids the
// notice, and a notice that arrives after it (delayed on the way) never
// matches. Stamps come from a process-wide sequence that starts at the clock,
// so they never repeat on this node, across log resets and restarts too.

import (
	"sync/atomic"
	"time"
)

// markerStamps hands out marker stamps: increasing, never zero, and above
// every stamp of an earlier run of this process (nanoseconds since 1970 grow
// faster than markers are written).
var markerStamps atomic.Uint64

func init() { markerStamps.Store(uint64(time.Now().UnixNano())) }

func nextMarkerStamp() uint64 { return markerStamps.Add(1) }

// txnNotice is a coordinator's word that a producer at epoch has this
// partition in its open transaction, valid while the leader epoch and the
// producer's marker stamp are those it names.
type txnNotice struct {
	epoch       int16
	stamp       uint64
	leaderEpoch int32
}

// MarkerStamp returns the stamp of producer pid's latest marker on this
// replica since it was opened (0: none), and the leader epoch: a coordinator
// binds its notices to both (NoteTxn).
func (p *Partition) MarkerStamp(pid int64) (stamp uint64, leaderEpoch int32) {
	p.txns.mu.Lock()
	defer p.txns.mu.Unlock()
	return p.txns.stamps[pid], p.leaderEpoch.Load()
}

// NoteTxn keeps a coordinator's notice that producer pid at epoch has this
// partition in its open transaction, if this replica leads at leaderEpoch and
// the producer's latest marker here is still the one of stamp. It reports
// whether the notice was kept.
func (p *Partition) NoteTxn(pid int64, epoch int16, stamp uint64, leaderEpoch int32) bool {
	if stamp == 0 || !p.IsLeader() {
		return false
	}
	p.txns.mu.Lock()
	defer p.txns.mu.Unlock()
	if p.leaderEpoch.Load() != leaderEpoch || p.txns.stamps[pid] != stamp {
		return false
	}
	p.txns.notices[pid] = txnNotice{epoch: epoch, stamp: stamp, leaderEpoch: leaderEpoch}
	return true
}

// TxnNoticed reports whether a notice covers a transactional batch of producer
// pid at epoch that would open a transaction here, and the guard to append it
// with (AppendVerified), which fails if a marker of the producer comes first.
func (p *Partition) TxnNoticed(pid int64, epoch int16) (guard uint64, ok bool) {
	p.txns.mu.Lock()
	defer p.txns.mu.Unlock()
	n, ok := p.txns.notices[pid]
	if !ok || n.epoch != epoch || n.leaderEpoch != p.leaderEpoch.Load() || n.stamp != p.txns.stamps[pid] {
		return 0, false
	}
	return p.txns.markers[pid], true
}

// stampMarkerLocked notes a marker of pid: a new stamp, and its notice is
// void. The caller holds x.mu.
func (x *txnIndex) stampMarkerLocked(pid int64) {
	x.stamps[pid] = nextMarkerStamp()
	delete(x.notices, pid)
}
