package appliance

// The share groups' part of the node (package sharegroup): the membership
// coordinator, the share-partitions led here, and their store in the internal
// topic __share_group_state, written through the inter-broker listener.

import (
	"context"
	"time"

	"skiff/cluster"

	"skiff/kafkaapi"
	"skiff/sharegroup"
)

// startShareGroups creates the share-group coordinator, the share-partition
// manager and its store; the store connects on first use.
func (n *Node) startShareGroups() {
	c := n.cfg.Groups
	sasl, _ := n.followerSASL() // checked when replication started
	n.shareStore = sharegroup.NewTopicStore(sharegroup.TopicStoreConfig{
		Seeds: func() []string {
			var out []string
			for _, b := range n.cache.Brokers() {
				if addr, ok := n.brokerAddr(b.ID); ok {
					out = append(out, addr)
				}
			}
			return out
		},
		TLS:    n.followerTLS(),
		SASL:   sasl,
		Ensure: func(ctx context.Context) error { return n.kafka.EnsureShareStateTopic(ctx) },
		Logger: n.logger,
	})
	cfg := sharegroup.Config{
		Store:                n.shareStore,
		RecordLockDuration:   c.ShareRecordLockDuration,
		DeliveryCountLimit:   c.ShareDeliveryCountLimit,
		MaxRecordLocks:       c.ShareMaxRecordLocks,
		SessionTimeout:       c.ShareSessionTimeout,
		HeartbeatInterval:    c.ShareHeartbeatInterval,
		MinSessionTimeout:    c.ShareMinSessionTimeout,
		MaxSessionTimeout:    c.ShareMaxSessionTimeout,
		MinHeartbeatInterval: c.ShareMinHeartbeatInterval,
		MaxHeartbeatInterval: c.ShareMaxHeartbeatInterval,
		GroupConfigs:         n.shareStore.GroupConfigs,
		DeadLetter:           n.shareStore.DeadLetter,
		MemberLog:            n.groups,
		Logger:               n.logger,
	}
	n.shares = sharegroup.NewManager(cfg)
	n.shareGroups = sharegroup.NewCoordinator(cfg, func(name string) (sharegroup.TopicInfo, bool) {
		t, ok := n.cache.Topic(name)
		return sharegroup.TopicInfo{ID: t.ID, Partitions: t.Partitions}, ok
	}, n.shares.ReleaseMember)
	n.groups.SetShareGroups(n.shareGroups)
}

// shareKafkaConfig adds the share groups to the Kafka server's configuration.
func (n *Node) shareKafkaConfig(k kafkaapi.Config) kafkaapi.Config {
	k.ShareGroups, k.Shares, k.ShareConfigs = n.shareGroups, n.shares, n.shareStore
	k.MoreGroups = append(k.MoreGroups, n.shareGroups)
	return k
}

// watchGroupConfigs starts reading the GROUP configs (consumer.session.timeout.ms,
// ...) on a node leading consumer groups, once __share_group_state holds them:
// the coordinator reads them from the store's tail, which starts on first use.
// Before the topic exists no group has configs, and nothing is created for them.
func (n *Node) watchGroupConfigs(snap *cluster.Snapshot) {
	if n.shareStore == nil || len(n.groups.Led()) == 0 || !n.groupConfigsRead.CompareAndSwap(false, true) {
		return
	}
	if _, ok := snap.Topic(sharegroup.StateTopic); !ok {
		n.groupConfigsRead.Store(false)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		go func() {
			select {
			case <-n.stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		if err := n.shareStore.LoadGroupConfigs(ctx); err != nil {
			n.logger.Info("group coordinator: cannot read the group configs yet", "err", err)
			n.groupConfigsRead.Store(false) // a later snapshot tries again
		}
	}()
}
