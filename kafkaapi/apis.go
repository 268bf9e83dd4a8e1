package kafkaapi

// The table of served API keys. Each file NN_name.go registers its key from an init
// function (register): its versions, its handler, how its requests are counted and
// weighed against the limits. The connection loop, the decoder, ApiVersions and the
// limits read this table and know no key by number, so serving a new key is adding
// its file (and its test). docs/PROTOCOL.md lists the same ranges; a test checks
// that both say the same.

import (
	"fmt"
	"runtime"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// api is what a key's file registers. R is the key's request type
// (*kmsg.ProduceRequest, ...), whose Key() is the key.
type api[R kmsg.Request] struct {
	// min and max are the versions served, as ApiVersions advertises them.
	min, max int16
	// txnV2Max, above max, is the highest version served when Config.TxnV2 is
	// set (transaction version 2, not advertised yet); 0: none.
	txnV2Max int16
	// brokerMax, above max, is the highest version served whatever Config.TxnV2
	// and never advertised, for a key only brokers send (CLUSTER_ACTION): a
	// broker's request must not be refused because this node's setting differs
	// from its sender's (a rolling change of transaction-version); 0: none.
	brokerMax int16
	// beforeAuth: the key is served on a SASL listener to a connection that has
	// not authenticated (ApiVersions, SaslHandshake, SaslAuthenticate); any other
	// key closes such a connection (sasl.go).
	beforeAuth bool
	// handle answers a decoded request; a nil answer sends nothing (acks=0 Produce).
	handle func(s *Server, c *conn, hdr *RequestHeader, req R) kmsg.Response
	// write, set instead of handle, writes the answer to the connection itself
	// (Fetch's zero-copy response).
	write func(s *Server, c *conn, hdr *RequestHeader, req R) error
	// entries counts what a request names, the quantity max.partitions.per.request
	// bounds (topicEntries); nil: nothing.
	entries func(req R) int
	// shape, when set, walks a body of a served version before it is decoded and
	// returns entries of it, so that a request naming too many is refused before
	// kmsg allocates for them. It fails where the body is malformed.
	shape func(body []byte, version int16) (int, error)
	// weighsFrame: while it is read and decoded, a request takes its frame size from
	// the budget instead of decodeFactor times it, because its large fields alias the
	// frame and shape bounds its entries before it is decoded (Produce).
	weighsFrame bool
	// plainResponseHeader: the response header has no tagged fields even at flexible
	// versions (ApiVersions: clients parse its answer before they know which
	// versions the broker speaks, KIP-511).
	plainResponseHeader bool
	// unsupported, when set, is the answer to a version outside min..max
	// (ApiVersions: its v0 body listing the served versions, so the client can retry
	// at one it knows; txnV2: Config.TxnV2). Other keys get a body holding only
	// UNSUPPORTED_VERSION.
	unsupported func(txnV2 bool) kmsg.Response
	// pipelined, when set, reports whether a request of this version is handled
	// while earlier answers of its connection are still waiting (pipeline.go);
	// adds: a client's AddPartitionsToTxn may be among them. nil: never, the
	// request waits until every answer in flight is written.
	pipelined func(version int16, adds bool) bool
}

// apiKey is one entry of the table: an api with its request type erased.
type apiKey struct {
	key       int16
	name      string // kmsg's name of the key, the label of its request metric
	file      string // the file that registered it
	min, max  int16
	txnV2Max  int16
	brokerMax int16

	beforeAuth          bool
	weighsFrame         bool
	plainResponseHeader bool
	shape               func(body []byte, version int16) (int, error)
	entries             func(req kmsg.Request) int
	handle              func(s *Server, c *conn, hdr *RequestHeader, req kmsg.Request) kmsg.Response
	write               func(s *Server, c *conn, hdr *RequestHeader, req kmsg.Request) error
	unsupported         func(txnV2 bool) kmsg.Response
	pipelined           func(version int16, adds bool) bool
}

// apis is the table, indexed by key; nil: not served.
var apis [128]*apiKey

// register adds a key's entry to the table. It is called from the init function of
// the key's file, and panics on a mistake in the entry.
func register[R kmsg.Request](a api[R]) {
	var req R // a nil pointer: kmsg's Key and MaxVersion do not read it
	key := req.Key()
	_, file, _, _ := runtime.Caller(1)
	switch {
	case key < 0 || int(key) >= len(apis):
		panic(fmt.Sprintf("kafkaapi: key %d is outside the table", key))
	case apis[key] != nil:
		panic(fmt.Sprintf("kafkaapi: key %d registered by %s and %s", key, apis[key].file, file))
	case a.min < 0 || a.min > a.max || a.max > req.MaxVersion():
		panic(fmt.Sprintf("kafkaapi: key %d: versions %d..%d (kmsg knows up to %d)", key, a.min, a.max, req.MaxVersion()))
	case a.txnV2Max != 0 && (a.txnV2Max <= a.max || a.txnV2Max > req.MaxVersion()):
		panic(fmt.Sprintf("kafkaapi: key %d: TV2 versions up to %d after %d (kmsg knows up to %d)", key, a.txnV2Max, a.max, req.MaxVersion()))
	case a.brokerMax != 0 && (a.brokerMax <= a.max || a.brokerMax > req.MaxVersion()):
		panic(fmt.Sprintf("kafkaapi: key %d: broker versions up to %d after %d (kmsg knows up to %d)", key, a.brokerMax, a.max, req.MaxVersion()))
	case (a.handle == nil) == (a.write == nil):
		panic(fmt.Sprintf("kafkaapi: key %d needs exactly one of handle and write", key))
	}
	k := &apiKey{
		key: key, name: kmsg.NameForKey(key), file: file, min: a.min, max: a.max, txnV2Max: a.txnV2Max, brokerMax: a.brokerMax,
		beforeAuth: a.beforeAuth, weighsFrame: a.weighsFrame, plainResponseHeader: a.plainResponseHeader,
		shape: a.shape, unsupported: a.unsupported, pipelined: a.pipelined,
		entries: func(kmsg.Request) int { return 0 },
	}
	if a.entries != nil {
		k.entries = func(req kmsg.Request) int { return a.entries(req.(R)) }
	}
	if a.handle != nil {
		k.handle = func(s *Server, c *conn, hdr *RequestHeader, req kmsg.Request) kmsg.Response {
			return a.handle(s, c, hdr, req.(R))
		}
	} else {
		k.write = func(s *Server, c *conn, hdr *RequestHeader, req kmsg.Request) error {
			return a.write(s, c, hdr, req.(R))
		}
	}
	apis[key] = k
}

// lookup returns the entry of key, or nil when it is not served.
func lookup(key int16) *apiKey {
	if key < 0 || int(key) >= len(apis) {
		return nil
	}
	return apis[key]
}

// servedAt returns the entry of key when version is served, else nil.
func servedAt(key, version int16) *apiKey { return servedWith(key, version, false) }

// servedWith is servedAt with the versions of transaction version 2 served
// too when txnV2 is set (Config.TxnV2). Versions up to brokerMax are served
// either way.
func servedWith(key, version int16, txnV2 bool) *apiKey {
	a := lookup(key)
	if a == nil || version < a.min {
		return nil
	}
	if version <= a.max || version <= a.brokerMax || (txnV2 && version <= a.txnV2Max) {
		return a
	}
	return nil
}

// APIVersions lists the served keys and versions in key order, as ApiVersions
// answers them.
func APIVersions() []kmsg.ApiVersionsResponseApiKey { return apiVersionsWith(false) }

// apiVersionsWith is APIVersions with the versions of transaction version 2 as
// the maximum of their keys when txnV2 is set (Config.TxnV2).
func apiVersionsWith(txnV2 bool) []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	for _, a := range apis {
		if a != nil {
			k := kmsg.ApiVersionsResponseApiKey{ApiKey: a.key, MinVersion: a.min, MaxVersion: a.max}
			if txnV2 && a.txnV2Max > a.max {
				k.MaxVersion = a.txnV2Max
			}
			out = append(out, k)
		}
	}
	return out
}
