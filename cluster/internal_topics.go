package cluster

// OffsetsTopic is the internal topic holding committed consumer-group offsets.
const OffsetsTopic = "__consumer_offsets"

// TransactionTopic is the internal topic holding transaction coordinators' state.
const TransactionTopic = "__transaction_state"

// ShareStateTopic is the internal topic holding share-group state (package
// sharegroup, docs/format/share-state.md).
const ShareStateTopic = "__share_group_state"

// IsInternalTopic reports whether name is a topic the broker owns: clients cannot
// create or delete it, and Metadata marks it internal.
func IsInternalTopic(name string) bool {
	return name == OffsetsTopic || name == TransactionTopic || name == ShareStateTopic
}

// InternalTopicConfigs returns the configs a broker gives an internal topic when
// it creates it, as Kafka does: __consumer_offsets, __transaction_state and
// __share_group_state are compacted, so that a group's offsets, a transactional
// id's state and a share-partition's state live as long as they are current. They also act as that topic's defaults, above the
// broker's, for a topic created without them (by an older Skiff).
func InternalTopicConfigs(name string) map[string]string {
	if name == OffsetsTopic || name == TransactionTopic || name == ShareStateTopic {
		return map[string]string{ConfigCleanupPolicy: CleanupCompact}
	}
	return nil
}
