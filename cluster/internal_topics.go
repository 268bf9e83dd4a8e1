package cluster

// OffsetsTopic is the internal topic holding committed consumer-group offsets.
const OffsetsTopic = "__consumer_offsets"

// ShareStateTopic is the internal topic holding share-group state (package
// sharegroup, docs/format/share-state.md).
const ShareStateTopic = "__share_group_state"

// IsInternalTopic reports whether name is a topic the broker owns: clients cannot
// create or delete it, and Metadata marks it internal.
func IsInternalTopic(name string) bool { return name == OffsetsTopic || name == ShareStateTopic }
