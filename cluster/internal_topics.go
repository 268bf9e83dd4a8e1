package cluster

// OffsetsTopic is the internal topic holding committed consumer-group offsets.
const OffsetsTopic = "__consumer_offsets"

// IsInternalTopic reports whether name is a topic the broker owns: clients cannot
// create or delete it, and Metadata marks it internal.
func IsInternalTopic(name string) bool { return name == OffsetsTopic }
