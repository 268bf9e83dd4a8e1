package main

import "skiff/appliance"

// groupConfig is the group coordinator's part of the serve settings.
func groupConfig(vals settingValues) appliance.GroupConfig {
	delay := vals.duration("group-initial-rebalance-delay")
	if delay == 0 {
		delay = -1 // the setting's 0 is "no delay"; the appliance's zero is its default
	}
	return appliance.GroupConfig{
		MinSessionTimeout:             vals.duration("group-min-session-timeout"),
		MaxSessionTimeout:             vals.duration("group-max-session-timeout"),
		InitialRebalanceDelay:         delay,
		MaxSize:                       int(vals.int("group-max-size")),
		OffsetsRetention:              vals.duration("offsets-retention"),
		OffsetsRetentionCheckInterval: vals.duration("offsets-retention-check-interval"),
		OffsetsTopicPartitions:        int32(vals.int("offsets-topic-num-partitions")),
		OffsetsTopicReplicationFactor: int16(vals.int("offsets-topic-replication-factor")),
	}
}
