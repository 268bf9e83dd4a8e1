package kafkaapi

import "github.com/twmb/franz-go/pkg/kmsg"

// CheckLeaderEpoch exposes checkLeaderEpoch to the external tests: an older
// current_leader_epoch (FENCED_LEADER_EPOCH) cannot be produced over the wire on a
// single node, whose partitions stay at leader epoch 0.
var CheckLeaderEpoch = checkLeaderEpoch

// ServedRequests, ServedRequestsTxnV2 and EncodeFrame give the connection fuzz
// target the decode fuzz target's seeds: one request per served key and version
// (of transaction version 2 too), framed without the size.
var (
	ServedRequests      = servedRequests
	ServedRequestsTxnV2 = func() []kmsg.Request { return servedRequestsWith(true) }
	EncodeFrame         = encodeFrame
)

// FindProtocolDoc, ReadProfileTable and ReadTxnV2Table read PROTOCOL.md's profile
// table and its rows for transaction version 2, which the conformance tests
// compare with what a node advertises.
var (
	FindProtocolDoc  = findProtocolDoc
	ReadProfileTable = readProfileTable
	ReadTxnV2Table   = readTxnV2Table
)

// APIVersionsTxnV2 is what ApiVersions lists with Config.TxnV2: the served
// versions of transaction version 2 as their keys' maxima.
func APIVersionsTxnV2() []kmsg.ApiVersionsResponseApiKey { return apiVersionsWith(true) }

// ServedAt reports whether a node at transaction version 1 serves key at
// version: more than it advertises for the keys only brokers send (brokerMax).
func ServedAt(key, version int16) bool { return servedAt(key, version) != nil }
