package cluster

// OffsetsTopic is the internal topic holding committed consumer-group offsets.
const OffsetsTopic = "__consumer_offsets"

// TransactionTopic is the internal topic holding transaction coordinators' state.
const TransactionTopic = "__transaction_state"

// IsInternalTopic reports whether name is a topic the broker owns: clients cannot
// create or delete it, and Metadata marks it internal.
func IsInternalTopic(name string) bool { return name == OffsetsTopic || name == TransactionTopic }
