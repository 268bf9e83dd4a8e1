package txn

// DescribeTransactions and ListTransactions (KIP-664): what the coordinator holds.

import (
	"time"
)

// Description is the state of one transactional id, as DescribeTransactions and
// ListTransactions show it.
type Description struct {
	ID         string
	State      State
	ProducerID int64
	Epoch      int16
	Timeout    time.Duration
	Started    time.Time // zero: no transaction open
	Partitions []TopicPartition
}

func (m *txnMeta) describe() Description {
	return Description{ID: m.id, State: m.state, ProducerID: m.pid, Epoch: m.epoch, Timeout: m.timeout,
		Started: m.started, Partitions: m.sortedPartitions()}
}

// Describe returns the state of transactional id, or the code to answer:
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, TRANSACTIONAL_ID_NOT_FOUND.
func (c *Coordinator) Describe(id string) (Description, int16) {
	sh, code := c.shardFor(id)
	if code != 0 {
		return Description{}, code
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	m := sh.txns[id]
	if m == nil || m.pid < 0 {
		return Description{}, codeTxnIDNotFound
	}
	return m.describe(), 0
}

// List returns the transactional ids of every loaded partition coordinated here
// for which keep is true.
func (c *Coordinator) List(keep func(Description) bool) []Description {
	var out []Description
	for _, sh := range c.loadedShards() {
		sh.mu.Lock()
		for _, m := range sh.txns {
			if d := m.describe(); m.pid >= 0 && keep(d) {
				out = append(out, d)
			}
		}
		sh.mu.Unlock()
	}
	return out
}
