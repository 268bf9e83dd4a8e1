package cluster

// OffsetsTopic is the internal topic holding committed consumer-group offsets.
const OffsetsTopic = "__consumer_offsets"

// IsInternalTopic reports whether name is a topic the broker owns: clients cannot
// create or delete it, and Metadata marks it internal.
func IsInternalTopic(name string) bool { return name == OffsetsTopic }

// InternalTopicConfigs returns the configs a broker gives an internal topic when
// it creates it, as Kafka does: __consumer_offsets is compacted, so that a
// group's offsets live as long as the group commits them. They also act as
// that topic's defaults, above the broker's, for a topic created without them
// (by an older Skiff).
func InternalTopicConfigs(name string) map[string]string {
	if name == OffsetsTopic {
		return map[string]string{ConfigCleanupPolicy: CleanupCompact}
	}
	return nil
}
