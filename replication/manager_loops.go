package replication

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// follow makes p fetch from leader (-1: from nobody), moving it between fetchers.
// Fetchers without partitions stop.
func (m *Manager) follow(p *Partition, leader int32) {
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	cur, ok := m.following[p]
	if ok && cur == leader {
		return
	}
	if ok {
		if f := m.fetchers[cur]; f != nil {
			f.remove(p)
			if f.empty() {
				f.close()
				delete(m.fetchers, cur)
			}
		}
		delete(m.following, p)
	}
	if leader < 0 || leader == m.cfg.BrokerID {
		return
	}
	f := m.fetchers[leader]
	if f == nil {
		f = newFetcher(m, leader)
		m.fetchers[leader] = f
	}
	f.add(p)
	m.following[p] = leader
}

// isrLoop shrinks and grows the ISR of the partitions this broker leads that have
// other replicas (a partition alone has nothing to change). It checks often, so
// that a follower that has caught up joins promptly; a lagging one leaves after
// ReplicaLagMax.
func (m *Manager) isrLoop() {
	defer m.wg.Done()
	t := time.NewTicker(min(m.cfg.ReplicaLagMax/4, 250*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		for _, p := range m.replicatedPartitions() {
			isr, epoch, ok := p.isrChange(now, m.cfg.ReplicaLagMax)
			if !ok {
				continue
			}
			if m.cfg.AlterISR == nil {
				p.isrChanged(isr, epoch, true)
				continue
			}
			ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
			written, next, err := m.cfg.AlterISR(ctx, p.Topic, p.ID, epoch, isr)
			cancel()
			if err != nil {
				level := slog.LevelWarn
				if errors.Is(err, ErrISRUnchanged) {
					level = slog.LevelDebug // retried on the next tick
				}
				p.logger.Log(m.ctx, level, "ISR change not written", "isr", isr, "err", err)
				p.isrChanged(nil, 0, false)
				continue
			}
			isr = written
			p.logger.Info("ISR changed", "isr", isr, "partition_epoch", next)
			if old := p.ISR(); len(isr) < len(old) {
				m.metrics.isrShrinks.Add(1)
			} else {
				m.metrics.isrExpands.Add(1)
			}
			p.isrChanged(isr, next, true)
			now = time.Now() // the write took a while
		}
	}
}

// checkpointLoop writes every partition's high watermark and producer state
// snapshot every few seconds.
func (m *Manager) checkpointLoop() {
	defer m.wg.Done()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		for _, p := range m.Partitions() {
			if err := p.checkpointHW(); err != nil {
				p.logger.Warn("high watermark checkpoint", "err", err)
			}
			if err := p.snapshotProducers(); err != nil {
				p.logger.Warn("producer state snapshot", "err", err)
			}
		}
	}
}
