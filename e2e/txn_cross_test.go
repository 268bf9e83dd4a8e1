package e2e

// Transactions between nodes: the transaction coordinator's notices to remote
// partition leaders (replication/txn_notice.go, txn/notice.go) and the group
// coordinator's verification of TxnOffsetCommit (groups/txn_offsets.go), on a
// three-node cluster where the coordinators are on other nodes than the
// partitions they deal with.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/internal/testnode"
)

// txnCross is the shared cluster of TestTxnCrossNode and its topic's leaders.
type txnCross struct {
	nodes   []*testnode.Node
	byID    map[int32]*testnode.Node
	adm     *kadm.Client
	topic   string
	leaders map[int32]int32 // partition -> leader
}

// TestTxnCrossNode runs the cross-node transaction cases on one cluster.
func TestTxnCrossNode(t *testing.T) {
	nodes := testnode.StartCluster(t, 3, "--group-initial-rebalance-delay", "0")
	x := &txnCross{nodes: nodes, byID: map[int32]*testnode.Node{}, topic: "txncross", leaders: map[int32]int32{}}
	for _, n := range nodes {
		x.byID[n.ID] = n
	}
	createTopicWith(t, nodes[0].Addr, x.topic, 6, 3, map[string]string{"min.insync.replicas": "2"})
	x.adm = kadm.NewClient(newClient(t, nodes[0].Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := x.adm.Metadata(ctx, x.topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics[x.topic].Partitions {
		x.leaders[p.Partition] = p.Leader
	}
	t.Run("NoticesUsed", x.noticesUsed)
	t.Run("NoProduceAfterEnd", x.noProduceAfterEnd)
	t.Run("TxnOffsetCommitVerified", x.txnOffsetCommitVerified)
}

// noticesUsed: a franz-go transactional producer whose coordinator is on
// another node than the partitions it writes; from its second transaction on,
// their leaders append its first batches under the coordinator's notice, and a
// read_committed consumer reads exactly the committed transactions.
func (x *txnCross) noticesUsed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	id, coord := x.txnIDAwayFrom(t, ctx, "notices")
	parts := x.partitionsNotOn(coord)
	before := x.firstWrites(t)

	cl := newClient(t, x.nodes[0].Addr, kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(x.topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	const txns = 12
	want := map[string]bool{}
	for i := range txns {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		commit := i%3 != 1 || i == txns-1 // the last one commits: the consumer's end
		var recs []*kgo.Record
		for _, p := range parts {
			v := fmt.Sprintf("%d/%d", i, p)
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(v)})
			if commit {
				want[v] = true
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction %d: %v", i, err)
		}
	}
	after := x.firstWrites(t)
	var noticed, asked float64
	for leader := range x.leadersOf(parts) {
		noticed += after[leader]["noticed"] - before[leader]["noticed"]
		asked += after[leader]["asked"] - before[leader]["asked"]
	}
	t.Logf("%d transactions over %d partitions led away from coordinator %d: %v first writes asked, %v noticed", txns, len(parts), coord, asked, noticed)
	if noticed == 0 {
		t.Fatalf("no batch was appended under a notice (%v verified by asking)", asked)
	}

	// The last transaction's records end every partition: once read, all
	// before them were read too.
	offsets := map[string]map[int32]kgo.Offset{x.topic: {}}
	for _, p := range parts {
		offsets[x.topic][p] = kgo.NewOffset().AtStart()
	}
	cons := newClient(t, x.nodes[1].Addr, kgo.ConsumePartitions(offsets), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got, ends := map[string]bool{}, 0
	for ends < len(parts) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d records, %d of %d partitions to their end", len(got), ends, len(parts))
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if got[v] {
				t.Fatalf("record %s read twice", v)
			}
			if !want[v] {
				t.Fatalf("record %s of an aborted transaction read at read_committed", v)
			}
			got[v] = true
			if strings.HasPrefix(v, fmt.Sprintf("%d/", txns-1)) {
				ends++
			}
		})
	}
	if len(got) != len(want) {
		t.Fatalf("read %d committed records, want %d", len(got), len(want))
	}
}

// noProduceAfterEnd: after a transaction whose partition on a remote leader
// was noticed ends (abort, then commit), a Produce of a transactional batch of
// the same producer and epoch there, its sequence the next one, is refused
// (INVALID_TXN_STATE) and opens no transaction.
func (x *txnCross) noProduceAfterEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, coord := x.txnIDAwayFrom(t, ctx, "hazard")
	p := x.partitionsNotOn(coord)[0]
	tx := x.newRawTxn(t, ctx, id, coord)
	leader := x.byID[x.leaders[p]]
	seq := int32(0)
	// The first transaction gives the coordinator the producer's marker stamp
	// there: the later ones are noticed.
	for i, commit := range []bool{true, false, true} {
		tx.addPartition(t, ctx, x.topic, p)
		wantCode(t, fmt.Sprintf("produce in transaction %d", i), x.produceTxn(t, ctx, leader, id, tx, p, seq), 0)
		seq++
		tx.end(t, ctx, commit)
		x.settled(t, ctx, leader, p)
		if i == 0 {
			continue
		}
		what := fmt.Sprintf("produce after the end (commit %v) of transaction %d", commit, i)
		wantCode(t, what, x.produceTxn(t, ctx, leader, id, tx, p, seq), kerr.InvalidTxnState.Code)
		if lso, hw := x.listOffset(t, ctx, leader, p, 1), x.listOffset(t, ctx, leader, p, 0); lso != hw {
			t.Fatalf("%s: last stable offset %d, high watermark %d: a transaction was left open", what, lso, hw)
		}
	}
}

// txnOffsetCommitVerified: with the group coordinator on another node than the
// transaction coordinator, TxnOffsetCommit v3 and v4 without AddOffsetsToTxn
// are refused and append nothing; with it, the offsets commit.
func (x *txnCross) txnOffsetCommitVerified(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, coord := x.txnIDAwayFrom(t, ctx, "offsets")
	group, groupCoord := "", int32(-1)
	for i := 0; groupCoord == -1 || groupCoord == coord; i++ {
		group = fmt.Sprintf("txncross-group-%d", i)
		groupCoord = x.coordinator(t, ctx, group, false)
	}
	gc := x.byID[groupCoord]
	tx := x.newRawTxn(t, ctx, id, coord)
	tx.addPartition(t, ctx, x.topic, 0) // the transaction is open, without the group's offsets
	commit := func(version int16, offset int64) int16 {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.SetVersion(version)
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = id, group, tx.pid, tx.epoch
		req.Generation, req.MemberID = -1, ""
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = x.topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return retryCode(t, ctx, func() int16 {
			resp, err := rawRequest(t, gc.Addr, req, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return resp.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		})
	}
	offsetsEnds := endOffsets(t, ctx, x.adm, "__consumer_offsets")
	wantCode(t, "TxnOffsetCommit v3 without AddOffsetsToTxn", commit(3, 5), kerr.InvalidTxnState.Code)
	wantCode(t, "TxnOffsetCommit v4 without AddOffsetsToTxn", commit(4, 5), kerr.TransactionAbortable.Code)
	for p, end := range endOffsets(t, ctx, x.adm, "__consumer_offsets") {
		if end != offsetsEnds[p] {
			t.Fatalf("__consumer_offsets-%d grew from %d to %d: a refused commit appended", p, offsetsEnds[p], end)
		}
	}

	tx.addOffsets(t, ctx, group)
	wantCode(t, "TxnOffsetCommit v4 after AddOffsetsToTxn", commit(4, 7), 0)
	tx.end(t, ctx, true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		fetched, err := x.adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := fetched.Lookup(x.topic, 0)
		if o.At == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offset %d after the commit, want 7", o.At)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	wantCode(t, "TxnOffsetCommit v4 after the transaction's end", commit(4, 9), kerr.TransactionAbortable.Code)
	fetched, err := x.adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := fetched.Lookup(x.topic, 0); o.At != 7 {
		t.Fatalf("committed offset %d after a refused late commit, want 7", o.At)
	}
}

// coordinator returns the node coordinating key: a transactional id (txn) or
// a group.
func (x *txnCross) coordinator(t *testing.T, ctx context.Context, key string, txn bool) int32 {
	t.Helper()
	for {
		var resps kadm.FindCoordinatorResponses
		if txn {
			resps = x.adm.FindTxnCoordinators(ctx, key)
		} else {
			resps = x.adm.FindGroupCoordinators(ctx, key)
		}
		r := resps[key]
		if r.Err == nil {
			return r.NodeID
		}
		if !kerr.IsRetriable(r.Err) || ctx.Err() != nil {
			t.Fatalf("find the coordinator of %s: %v", key, r.Err)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
}

// txnIDAwayFrom returns a transactional id starting with prefix whose
// coordinator does not lead all of the topic's partitions, and that coordinator.
func (x *txnCross) txnIDAwayFrom(t *testing.T, ctx context.Context, prefix string) (string, int32) {
	t.Helper()
	for i := 0; ; i++ {
		id := fmt.Sprintf("txncross-%s-%d", prefix, i)
		if c := x.coordinator(t, ctx, id, true); len(x.partitionsNotOn(c)) > 0 {
			return id, c
		}
	}
}

// partitionsNotOn returns the topic's partitions led by nodes other than node.
func (x *txnCross) partitionsNotOn(node int32) []int32 {
	var out []int32
	for p := range int32(len(x.leaders)) {
		if x.leaders[p] != node {
			out = append(out, p)
		}
	}
	return out
}

// leadersOf returns the nodes leading parts.
func (x *txnCross) leadersOf(parts []int32) map[int32]bool {
	out := map[int32]bool{}
	for _, p := range parts {
		out[x.leaders[p]] = true
	}
	return out
}

// firstWrites reads skiff_txn_first_writes_total of every node, by node and
// label how.
func (x *txnCross) firstWrites(t *testing.T) map[int32]map[string]float64 {
	t.Helper()
	out := map[int32]map[string]float64{}
	for _, n := range x.nodes {
		status, body, err := n.AdminGet("/metrics")
		if err != nil || status != 200 {
			t.Fatalf("metrics of node %d: %d %v", n.ID, status, err)
		}
		out[n.ID] = map[string]float64{}
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			name, value, ok := strings.Cut(sc.Text(), " ")
			how, found := strings.CutPrefix(name, `skiff_txn_first_writes_total{how="`)
			if !ok || !found {
				continue
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", sc.Text(), err)
			}
			out[n.ID][strings.TrimSuffix(how, `"}`)] = v
		}
	}
	return out
}

// rawTxn is a transactional producer driven with raw requests to its
// coordinator.
type rawTxn struct {
	id    string
	coord *testnode.Node
	pid   int64
	epoch int16
}

func (x *txnCross) newRawTxn(t *testing.T, ctx context.Context, id string, coord int32) *rawTxn {
	t.Helper()
	tx := &rawTxn{id: id, coord: x.byID[coord]}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
	wantCode(t, "InitProducerID", retryCode(t, ctx, func() int16 {
		r := tx.do(t, req).(*kmsg.InitProducerIDResponse)
		tx.pid, tx.epoch = r.ProducerID, r.ProducerEpoch
		return r.ErrorCode
	}), 0)
	return tx
}

func (tx *rawTxn) do(t *testing.T, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := rawRequest(t, tx.coord.Addr, req, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (tx *rawTxn) addPartition(t *testing.T, ctx context.Context, topic string, p int32) {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = tx.id, tx.pid, tx.epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{p}}}
	wantCode(t, "AddPartitionsToTxn", retryCode(t, ctx, func() int16 {
		return tx.do(t, req).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
	}), 0)
}

func (tx *rawTxn) addOffsets(t *testing.T, ctx context.Context, group string) {
	t.Helper()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = tx.id, tx.pid, tx.epoch, group
	wantCode(t, "AddOffsetsToTxn", retryCode(t, ctx, func() int16 {
		return tx.do(t, req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
	}), 0)
}

func (tx *rawTxn) end(t *testing.T, ctx context.Context, commit bool) {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = tx.id, tx.pid, tx.epoch, commit
	wantCode(t, "EndTxn", retryCode(t, ctx, func() int16 {
		return tx.do(t, req).(*kmsg.EndTxnResponse).ErrorCode
	}), 0)
}

// produceTxn sends Produce v10 of one transactional record of tx at seq to
// partition p on leader, as a client that skipped AddPartitionsToTxn would,
// and returns the code.
func (x *txnCross) produceTxn(t *testing.T, ctx context.Context, leader *testnode.Node, id string, tx *rawTxn, p, seq int32) int16 {
	t.Helper()
	b := batch.BuildTransactional(time.Now().UnixMilli(), tx.pid, tx.epoch, []batch.Record{{Value: []byte(fmt.Sprint(seq))}})
	binary.BigEndian.PutUint32(b[53:], uint32(seq)) // base sequence (record batch v2)
	binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(10)
	req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: x.topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: p, Records: b}}}}
	return retryCode(t, ctx, func() int16 {
		resp, err := rawRequest(t, leader.Addr, req, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	})
}

// listOffset returns partition p's latest offset on leader at isolation (0: the
// high watermark, 1: the last stable offset).
func (x *txnCross) listOffset(t *testing.T, ctx context.Context, leader *testnode.Node, p int32, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(4)
	req.ReplicaID, req.IsolationLevel = -1, isolation
	req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: x.topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: p, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
	var off int64
	wantCode(t, "ListOffsets", retryCode(t, ctx, func() int16 {
		resp, err := rawRequest(t, leader.Addr, req, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		rp := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		off = rp.Offset
		return rp.ErrorCode
	}), 0)
	return off
}

// settled waits until no transaction is open on p (its markers are written).
func (x *txnCross) settled(t *testing.T, ctx context.Context, leader *testnode.Node, p int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for x.listOffset(t, ctx, leader, p, 1) != x.listOffset(t, ctx, leader, p, 0) {
		if time.Now().After(deadline) {
			t.Fatalf("partition %d: a transaction is still open 10 s after its end", p)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}

// retryCode calls do until its code is not one to try again (a coordinator
// that loads or moves, a transaction being ended), or ctx ends.
func retryCode(t *testing.T, ctx context.Context, do func() int16) int16 {
	t.Helper()
	for {
		code := do()
		err := kerr.ErrorForCode(code)
		if code == 0 || ctx.Err() != nil || !(kerr.IsRetriable(err) || errors.Is(err, kerr.ConcurrentTransactions)) {
			return code
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
	}
}
