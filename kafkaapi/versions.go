package kafkaapi

import "github.com/twmb/franz-go/pkg/kmsg"

// versionRange is what the server advertises for one API key.
type versionRange struct{ min, max int16 }

// advertised is the protocol profile of PROTOCOL.md: exactly these keys and ranges are
// advertised in ApiVersions, and anything else is refused with UNSUPPORTED_VERSION.
// Every maximum is the last non-flexible version, except ApiVersions 3.
var advertised = map[int16]versionRange{
	0:  {3, 7},  // Produce
	1:  {4, 11}, // Fetch
	2:  {0, 5},  // ListOffsets
	3:  {0, 8},  // Metadata
	8:  {0, 7},  // OffsetCommit
	9:  {0, 5},  // OffsetFetch
	10: {0, 2},  // FindCoordinator
	11: {0, 5},  // JoinGroup
	12: {0, 3},  // Heartbeat
	13: {0, 3},  // LeaveGroup
	14: {0, 3},  // SyncGroup
	15: {0, 4},  // DescribeGroups
	16: {0, 2},  // ListGroups
	18: {0, 3},  // ApiVersions
	19: {0, 4},  // CreateTopics
	20: {0, 3},  // DeleteTopics
	22: {0, 1},  // InitProducerId
	23: {0, 3},  // OffsetForLeaderEpoch
	32: {0, 3},  // DescribeConfigs
	37: {0, 1},  // CreatePartitions
	42: {0, 1},  // DeleteGroups
	47: {0, 0},  // OffsetDelete
}

// supported reports whether key at version is served.
func supported(key, version int16) bool {
	r, ok := advertised[key]
	return ok && version >= r.min && version <= r.max
}

// apiKeys lists the advertised ranges in key order, as ApiVersions answers them.
func apiKeys() []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(advertised))
	for key := int16(0); key < 100; key++ {
		if r, ok := advertised[key]; ok {
			out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: key, MinVersion: r.min, MaxVersion: r.max})
		}
	}
	return out
}
