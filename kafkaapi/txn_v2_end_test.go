package kafkaapi_test

// Transaction version 2 at the request path (WP3b of docs/design/txn-v2.md):
// EndTxn v5, TxnOffsetCommit v5 and ApiVersions' transaction.version feature,
// on nodes with kafkaapi.Config.TxnV2 switched on.

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
	"skiff/kafkaapi"
)

// startTxnV2Node starts a node serving transaction version 2, closed when t
// ends.
func startTxnV2Node(t *testing.T, opts ...func(*appliance.Config)) *appliance.Node {
	t.Helper()
	n, err := startNode(t.TempDir(), append([]func(*appliance.Config){func(c *appliance.Config) { c.Txn.Version = 2 }}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// raisedForTxnV2 is profile, the advertised keys of a node without TxnV2, with
// the maxima a TxnV2 node lists: the served versions of transaction version 2.
func raisedForTxnV2(profile []kmsg.ApiVersionsResponseApiKey) []kmsg.ApiVersionsResponseApiKey {
	raised := make(map[int16]int16)
	for _, k := range kafkaapi.APIVersionsTxnV2() {
		raised[k.ApiKey] = k.MaxVersion
	}
	out := make([]kmsg.ApiVersionsResponseApiKey, len(profile))
	for i, k := range profile {
		out[i] = k
		if m := raised[k.ApiKey]; m > k.MaxVersion {
			out[i].MaxVersion = m
		}
	}
	return out
}

// endTxnV5 sends EndTxn v5 for the fixture's id at (pid, epoch), retrying
// while the previous transaction's markers are written
// (CONCURRENT_TRANSACTIONS, as clients do), and returns the answer.
func endTxnV5(t *testing.T, c *kconn, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(5)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	var resp *kmsg.EndTxnResponse
	waitFor(t, 10*time.Second, "EndTxn v5 to be answered other than CONCURRENT_TRANSACTIONS", func() bool {
		resp = c.do(req).(*kmsg.EndTxnResponse)
		return resp.ErrorCode != kerr.ConcurrentTransactions.Code
	})
	return resp
}

// wantEnded checks an EndTxn v5 answer: no error, and the producer goes on
// with (pid, epoch).
func wantEnded(t *testing.T, what string, resp *kmsg.EndTxnResponse, pid int64, epoch int16) {
	t.Helper()
	if resp.ErrorCode != 0 || resp.ProducerID != pid || resp.ProducerEpoch != epoch {
		t.Fatalf("%s: %s with (%d, %d), want no error with (%d, %d)", what, errName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch, pid, epoch)
	}
}

// wantEndRefused checks an EndTxn v5 refusal: code, and producer id and epoch -1.
func wantEndRefused(t *testing.T, what string, resp *kmsg.EndTxnResponse, code int16) {
	t.Helper()
	if resp.ErrorCode != code || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Fatalf("%s: %s with (%d, %d), want %s with (-1, -1)", what, errName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch, errName(code))
	}
}

// waitTxnComplete waits until the transaction of id is CompleteCommit or
// CompleteAbort (DescribeTransactions). Until then an EndTxn v5 at the bumped
// epoch, with no add in between, is PRODUCER_FENCED (txn.endTxnV2 answers the
// current epoch in PrepareX so; Kafka answers CONCURRENT_TRANSACTIONS, which
// clients retry): the tests below wait rather than depend on that answer.
func waitTxnComplete(t *testing.T, c *kconn, id string) {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	waitFor(t, 10*time.Second, "the transaction of "+id+" to be complete", func() bool {
		st := c.do(req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
		return st.ErrorCode == 0 && (st.State == "CompleteCommit" || st.State == "CompleteAbort")
	})
}

// TestTxnV2Conformance: on a TxnV2 node, every version of ApiVersions (0..4),
// EndTxn (0..5) and TxnOffsetCommit (0..5), built with kmsg, is served and
// means what it asks; ApiVersions v3+ lists the feature transaction.version
// as franz-go and Kafka's clients read it.
func TestTxnV2Conformance(t *testing.T) {
	n := startTxnV2Node(t)
	c := dial(t, n.KafkaAddr())
	t.Run("ProfileMatchesPROTOCOL.md", func(t *testing.T) {
		checkProfileAgainstDocWith(t, advertisedProfile(t, c), true)
	})
	t.Run("ApiVersions", func(t *testing.T) {
		conformApiVersions(t, c, []int16{0, 1, 2, 3, 4})
		want := raisedForTxnV2(advertisedProfile(t, dial(t, sharedNode(t).KafkaAddr())))
		for v := int16(0); v <= 4; v++ {
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(v)
			req.ClientSoftwareName, req.ClientSoftwareVersion = "skiff-kafkaapi-test", "1.0"
			resp := c.do(req).(*kmsg.ApiVersionsResponse)
			if !sameKeys(resp.ApiKeys, want) {
				t.Fatalf("v%d lists %+v, want %+v", v, resp.ApiKeys, want)
			}
			finalized := v >= 3 && resp.FinalizedFeaturesEpoch >= 0 && len(resp.FinalizedFeatures) == 1 &&
				resp.FinalizedFeatures[0].Name == "transaction.version" &&
				resp.FinalizedFeatures[0].MinVersionLevel == 2 && resp.FinalizedFeatures[0].MaxVersionLevel == 2
			if v >= 3 && !finalized {
				t.Errorf("v%d: finalized features %+v at epoch %d, want transaction.version 2 at an epoch >= 0", v, resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch)
			}
			// Kafka omits supported features whose minimum is 0 before v4 (KAFKA-17011).
			supported := len(resp.SupportedFeatures) == 1 && resp.SupportedFeatures[0].Name == "transaction.version" &&
				resp.SupportedFeatures[0].MinVersion == 0 && resp.SupportedFeatures[0].MaxVersion == 2
			if (v >= 4) != supported {
				t.Errorf("v%d: supported features %+v", v, resp.SupportedFeatures)
			}
			if v < 3 && (len(resp.FinalizedFeatures) > 0 || resp.FinalizedFeaturesEpoch != -1) {
				t.Errorf("v%d: finalized features %+v at epoch %d", v, resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch)
			}
		}
		// Above the served versions: the v0 body with ApiVersions' range only
		// (KIP-511), so that franz-go asks again at v4 and reads the features.
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(5)
		corr := c.send(req)
		frame, err := c.readFrame(ioTimeout)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := parseResponse(18, 0, corr, frame)
		if err != nil {
			t.Fatal(err)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		wantCode(t, "ApiVersions v5", av.ErrorCode, kerr.UnsupportedVersion.Code)
		only := []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
		if !sameKeys(av.ApiKeys, only) {
			t.Fatalf("ApiVersions v5 lists %+v, want %+v", av.ApiKeys, only)
		}
	})
	t.Run("EndTxn", func(t *testing.T) { conformEndTxn(t, c, []int16{0, 1, 2, 3, 4, 5}) })
	t.Run("TxnOffsetCommit", func(t *testing.T) { conformTxnOffsetCommit(t, c, []int16{0, 1, 2, 3, 4, 5}) })
}

// TestTxnV2EndTxn: EndTxn v5 bumps the epoch on commit and on abort and
// answers the new one; a retry at the epoch before the bump answers the
// current id and epoch; an abort with nothing in the transaction (from Empty,
// or after a completed one) is accepted with a bump; older epochs are fenced;
// v4 keeps its answer without an id.
func TestTxnV2EndTxn(t *testing.T) {
	c := dial(t, startTxnV2Node(t).KafkaAddr())
	f := newTxnFixture(t, c)
	e := f.epoch
	wantCode(t, "add partition", f.addPartition(t, c, 0, e, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	f.produce(t, c, 0, "committed")
	wantEnded(t, "commit", endTxnV5(t, c, f.id, f.pid, e, true), f.pid, e+1)
	waitFor(t, 10*time.Second, "the LSO after the commit to reach 2 (the record and the marker)",
		func() bool { return listOffset(t, c, f.topic, 1) == 2 })
	wantEnded(t, "commit retried at the epoch before the bump", endTxnV5(t, c, f.id, f.pid, e, true), f.pid, e+1)
	wantEndRefused(t, "abort at the epoch before the bump", endTxnV5(t, c, f.id, f.pid, e, false), kerr.InvalidTxnState.Code)

	// The next transaction, at the bumped epoch, from sequence 0: aborted.
	f.epoch = e + 1
	wantCode(t, "add partition at the bumped epoch", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	f.produce(t, c, 0, "aborted")
	wantEnded(t, "abort", endTxnV5(t, c, f.id, f.pid, e+1, false), f.pid, e+2)
	waitFor(t, 10*time.Second, "the LSO after the abort to reach 4", func() bool { return listOffset(t, c, f.topic, 1) == 4 })
	wantEnded(t, "abort retried", endTxnV5(t, c, f.id, f.pid, e+1, false), f.pid, e+2)

	// Nothing in the transaction: an abort bumps, a commit is refused.
	waitTxnComplete(t, c, f.id)
	wantEnded(t, "empty abort after an abort", endTxnV5(t, c, f.id, f.pid, e+2, false), f.pid, e+3)
	waitTxnComplete(t, c, f.id)
	wantEndRefused(t, "commit with nothing in the transaction", endTxnV5(t, c, f.id, f.pid, e+3, true), kerr.InvalidTxnState.Code)
	wantEndRefused(t, "abort two epochs back", endTxnV5(t, c, f.id, f.pid, e+1, false), kerr.ProducerFenced.Code)
	wantEndRefused(t, "another producer id", endTxnV5(t, c, f.id, f.pid+1000, e+3, false), kerr.InvalidProducerIDMapping.Code)

	g := newTxnFixture(t, c) // Empty
	wantEnded(t, "abort from Empty", endTxnV5(t, c, g.id, g.pid, g.epoch, false), g.pid, g.epoch+1)

	// v4 (TV1) keeps its rules: another epoch is INVALID_PRODUCER_EPOCH; at the
	// current one after a TV2 abort, a retry of that abort.
	wantCode(t, "v4 abort at an old epoch", f.end(t, c, 4, false), kerr.InvalidProducerEpoch.Code)
	f.epoch = e + 3
	waitFor(t, 10*time.Second, "EndTxn v4 abort at the current epoch to pass for a retry", func() bool {
		return f.end(t, c, 4, false) == 0
	})
}

// TestTxnV2EndTxnEpochOverflow: on a node whose transactional ids start at
// epoch 32765 (appliance.TxnConfig.FirstEpoch), EndTxn v5 bumps to 32766, then
// rotates the producer id: the answer is a new id at epoch 0, its marker
// (32767, the old id) closes the transaction, a retry with the old id at 32766
// answers the new id, and the new id goes on.
func TestTxnV2EndTxnEpochOverflow(t *testing.T) {
	n := startTxnV2Node(t, func(c *appliance.Config) { c.Txn.FirstEpoch = math.MaxInt16 - 2 })
	c := dial(t, n.KafkaAddr())
	f := newTxnFixture(t, c)
	if f.epoch != math.MaxInt16-2 {
		t.Fatalf("InitProducerId answered epoch %d, want 32765 (FirstEpoch)", f.epoch)
	}
	wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	f.produce(t, c, 0, "at 32765")
	wantEnded(t, "commit at 32765", endTxnV5(t, c, f.id, f.pid, f.epoch, true), f.pid, math.MaxInt16-1)

	f.epoch = math.MaxInt16 - 1
	wantCode(t, "add partition at 32766", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	f.produce(t, c, 0, "at 32766")
	resp := endTxnV5(t, c, f.id, f.pid, f.epoch, true)
	if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerID == f.pid || resp.ProducerEpoch != 0 {
		t.Fatalf("commit at 32766: %s with (%d, %d), want a new producer id at 0", errName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
	}
	next := resp.ProducerID
	waitFor(t, 10*time.Second, "the LSO after the commit at 32766 to reach 4", func() bool { return listOffset(t, c, f.topic, 1) == 4 })
	wantEnded(t, "commit retried with the old id at 32766", endTxnV5(t, c, f.id, f.pid, f.epoch, true), next, 0)

	f.pid, f.epoch = next, 0
	wantCode(t, "add partition with the new id", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	f.produce(t, c, 0, "new id")
	wantEnded(t, "commit with the new id", endTxnV5(t, c, f.id, next, 0, true), next, 1)
	waitFor(t, 10*time.Second, "the LSO after the new id's commit to reach 6", func() bool { return listOffset(t, c, f.topic, 1) == 6 })
}

// TestTxnV2TxnOffsetCommit: TxnOffsetCommit v5 needs no AddOffsetsToTxn: its
// offsets are pending (OffsetFetch require_stable: UNSTABLE_OFFSET_COMMIT)
// until EndTxn v5 commits them, and an aborted transaction's are dropped; a
// late commit at an ended epoch is fenced and appends nothing; v4 without
// AddOffsetsToTxn is still refused.
func TestTxnV2TxnOffsetCommit(t *testing.T) {
	c := dial(t, startTxnV2Node(t).KafkaAddr())
	f := newOffsetsTxnFixture(t, c)
	e := f.epoch
	wantCode(t, "v4 without AddOffsetsToTxn", f.commit(t, c, 4, 7), kerr.TransactionAbortable.Code)
	f.wantNothingPending(t, c, -1)

	wantCode(t, "v5 without AddOffsetsToTxn", f.commit(t, c, 5, 42), 0)
	if code, _ := f.stableOffset(c); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable while the commit is pending: %s, want UNSTABLE_OFFSET_COMMIT", errName(code))
	}
	wantCode(t, "v5 again in the transaction", f.commit(t, c, 5, 43), 0)
	wantEnded(t, "commit", endTxnV5(t, c, f.id, f.pid, e, true), f.pid, e+1)
	waitFor(t, 10*time.Second, "the committed offset 43 to be stable", func() bool {
		code, o := f.stableOffset(c)
		return code == 0 && o == 43
	})
	f.wantNothingPending(t, c, 43)

	// The next transaction, at once after the commit: its offsets wait for the
	// marker of the previous one (the hold), then are dropped by the abort.
	f.epoch = e + 1
	wantCode(t, "v5 in the next transaction", f.commit(t, c, 5, 99), 0)
	if code, _ := f.stableOffset(c); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable while the second commit is pending: %s, want UNSTABLE_OFFSET_COMMIT", errName(code))
	}
	wantEnded(t, "abort", endTxnV5(t, c, f.id, f.pid, e+1, false), f.pid, e+2)
	waitFor(t, 10*time.Second, "the aborted offset to be gone (43 stable)", func() bool {
		code, o := f.stableOffset(c)
		return code == 0 && o == 43
	})
	f.wantNothingPending(t, c, 43)

	// Late, at an ended epoch: the coordinator refuses the add (KIP-890's fence).
	f.epoch = e + 1
	wantCode(t, "v5 at an ended epoch", f.commit(t, c, 5, 1000), kerr.InvalidProducerEpoch.Code)
	f.wantNothingPending(t, c, 43)
}

// requestCounter counts the requests a client writes, by key and version
// (kgo.Dialer), so a test sees which versions franz-go chose.
type requestCounter struct {
	mu   sync.Mutex
	seen map[[2]int16]int
}

func (rc *requestCounter) dial(ctx context.Context, network, host string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: nc, rc: rc}, nil
}

// count returns how many requests of key were written at version (-1: any).
func (rc *requestCounter) count(key, version int16) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for kv, c := range rc.seen {
		if kv[0] == key && (version < 0 || kv[1] == version) {
			n += c
		}
	}
	return n
}

type countingConn struct {
	net.Conn
	rc  *requestCounter
	buf []byte // the start of a request not written whole yet
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for len(c.buf) >= 8 {
		size := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+size {
			break
		}
		kv := [2]int16{int16(binary.BigEndian.Uint16(c.buf[4:])), int16(binary.BigEndian.Uint16(c.buf[6:]))}
		c.rc.mu.Lock()
		if c.rc.seen == nil {
			c.rc.seen = make(map[[2]int16]int)
		}
		c.rc.seen[kv]++
		c.rc.mu.Unlock()
		c.buf = c.buf[4+size:]
	}
	return c.Conn.Write(p)
}

// TestTxnV2FranzGo: franz-go v1.22.3 against a TxnV2 node chooses transaction
// version 2: a GroupTransactSession that consumes and commits its offsets sends
// TxnOffsetCommit v5 and EndTxn v5 and no AddOffsetsToTxn, its epoch is
// bumped by each EndTxn, and the group's offsets are committed. It produces
// nothing: Produce v12 (WP3a) is not tested here.
func TestTxnV2FranzGo(t *testing.T) {
	n := startTxnV2Node(t)
	addr := n.KafkaAddr()
	c := dial(t, addr)
	in := topicName(t, "in")
	createTopic(t, c, in, 1, nil)
	for i := range 3 {
		wantCode(t, "produce input", c.do(produceRequest(7, -1, in, 0, makeBatch(noProducer, fmt.Sprint(i)))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var rc requestCounter
	group := topicName(t, "group")
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.Dialer(rc.dial),
		kgo.TransactionalID(topicName(t, "id")), kgo.TransactionTimeout(10*time.Second),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	got := 0
	for got < 3 && ctx.Err() == nil {
		fs := sess.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("poll: %v", errs)
		}
		got += fs.NumRecords()
	}
	if got != 3 {
		t.Fatalf("consumed %d records, want 3", got)
	}
	if err := sess.Begin(); err != nil {
		t.Fatal(err)
	}
	_, epoch0, err := sess.Client().ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := sess.End(ctx, kgo.TryCommit)
	if err != nil || !committed {
		t.Fatalf("End: committed %v, %v", committed, err)
	}
	_, epoch1, err := sess.Client().ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if epoch1 != epoch0+1 {
		t.Errorf("producer epoch %d after the transaction, want %d (bumped by EndTxn v5)", epoch1, epoch0+1)
	}
	for _, w := range []struct {
		what         string
		key, version int16
		want         int
	}{
		{"TxnOffsetCommit v5", 28, 5, 1},
		{"TxnOffsetCommit", 28, -1, 1},
		{"EndTxn v5", 26, 5, 1},
		{"EndTxn", 26, -1, 1},
		{"AddOffsetsToTxn", 25, -1, 0},
		{"AddPartitionsToTxn", 24, -1, 0},
	} {
		if n := rc.count(w.key, w.version); n != w.want {
			t.Errorf("%s sent %d times, want %d", w.what, n, w.want)
		}
	}
	offsets := kmsg.NewPtrOffsetFetchRequest()
	offsets.SetVersion(7)
	offsets.Group, offsets.RequireStable = group, true
	offsets.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: in, Partitions: []int32{0}}}
	waitFor(t, 10*time.Second, "the group's offset 3 to be committed and stable", func() bool {
		p := c.do(offsets).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
		return p.ErrorCode == 0 && p.Offset == 3
	})
}

// TestTxnV2FranzGoFirstTransaction: a new franz-go producer's first transaction
// on a TxnV2 node is TV2. franz-go chooses at BeginTransaction from the features
// of the ApiVersions answers it has, and asks v5 first: an UNSUPPORTED_VERSION
// answer listing every key (no features in a v0 body) was taken as the broker's
// versions, so its first connections never read the feature and the first
// transaction went out with AddPartitionsToTxn.
func TestTxnV2FranzGoFirstTransaction(t *testing.T) {
	n := startTxnV2Node(t)
	addr := n.KafkaAddr()
	topic := topicName(t, "")
	createTopic(t, dial(t, addr), topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var rc requestCounter
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.Dialer(rc.dial), kgo.TransactionalID(topicName(t, "id")),
		kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, _, err := cl.ProducerID(ctx); err != nil { // InitProducerId: the client has met the broker
		t.Fatal(err)
	}
	if err := produceTxn(ctx, cl, true, "first"); err != nil {
		t.Fatal(err)
	}
	if n := rc.count(24, -1); n != 0 {
		t.Errorf("AddPartitionsToTxn sent %d times, want 0 (TV2)", n)
	}
	if n := rc.count(0, 12); n != 1 {
		t.Errorf("Produce v12 sent %d times, want 1", n)
	}
	if n := rc.count(26, 5); n != 1 {
		t.Errorf("EndTxn v5 sent %d times, want 1", n)
	}
}
