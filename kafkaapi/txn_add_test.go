package kafkaapi_test

// Produce v12 and AddPartitionsToTxn v5 (transaction version 2, txn_add.go)
// on nodes with Config.TxnV2 on: one node (the coordinator local to every
// leader) and three (a remote coordinator for some leaders, AddPartitionsToTxn
// v5 between brokers).

import (
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
	"skiff/txn"
)

// startTxnCluster starts one node per entry of versions, each serving that
// transaction version, the others joining the first over etcd, and waits until
// every one is a live broker.
func startTxnCluster(t *testing.T, name string, versions ...int16) []*appliance.Node {
	t.Helper()
	return newTxnCluster(t, name, versions...).nodes
}

// txnCluster is a cluster of startTxnCluster whose nodes can be stopped and
// started again on their data directories, at another transaction version.
type txnCluster struct {
	t     *testing.T
	nodes []*appliance.Node
	dirs  []string
	names []string // etcd member names
	// etcd holds each node's etcd client and peer addresses, the same across
	// restarts: the other members know the peer address from the membership.
	etcd [][2]string
}

// freeAddr returns a 127.0.0.1 address with a port free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// newTxnCluster is startTxnCluster keeping what a restart needs.
func newTxnCluster(t *testing.T, name string, versions ...int16) *txnCluster {
	t.Helper()
	tc := &txnCluster{t: t}
	for i, version := range versions {
		tc.dirs = append(tc.dirs, t.TempDir())
		tc.names = append(tc.names, fmt.Sprintf("%s-%d", name, i))
		tc.etcd = append(tc.etcd, [2]string{freeAddr(t), freeAddr(t)})
		tc.nodes = append(tc.nodes, nil)
		tc.start(i, version, func(c *appliance.Config) {
			if i > 0 {
				c.Join = []string{tc.etcd[0][0]} // the first node's etcd client address
			}
		})
	}
	c := dial(t, tc.nodes[0].KafkaAddr())
	waitFor(t, 60*time.Second, fmt.Sprintf("%d live brokers", len(tc.nodes)), func() bool {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(8)
		req.Topics = []kmsg.MetadataRequestTopic{}
		return len(c.do(req).(*kmsg.MetadataResponse).Brokers) == len(tc.nodes)
	})
	return tc
}

// start starts node i on its data directory at transaction version version
// (a restart once it ran; Join is then ignored).
func (tc *txnCluster) start(i int, version int16, opts ...func(*appliance.Config)) *appliance.Node {
	tc.t.Helper()
	n, err := startNode(tc.dirs[i], append([]func(*appliance.Config){func(c *appliance.Config) {
		c.Txn.Version = version
		c.NodeName, c.EtcdClient, c.EtcdPeer = tc.names[i], tc.etcd[i][0], tc.etcd[i][1]
	}}, opts...)...)
	if err != nil {
		tc.t.Fatalf("node %d: %v", i, err)
	}
	tc.t.Cleanup(func() { n.Close() })
	tc.nodes[i] = n
	return n
}

// stop closes node i.
func (tc *txnCluster) stop(i int) {
	tc.t.Helper()
	if err := tc.nodes[i].Close(); err != nil {
		tc.t.Fatalf("close node %d: %v", i, err)
	}
}

// tv2Producer is a transactional producer driven by hand as a TV2 client
// would: InitProducerId, then Produce v12 without AddPartitionsToTxn.
type tv2Producer struct {
	id    string
	pid   int64
	epoch int16
	seqs  map[int32]int32 // next sequence by partition
}

// newTV2Producer starts a producer of a new transactional id whose
// coordinator is broker coordID, reached on coord.
func newTV2Producer(t *testing.T, coord *kconn, coordID int32) *tv2Producer {
	t.Helper()
	p := &tv2Producer{id: txnIDCoordinatedOn(t, coord, coordID), seqs: map[int32]int32{}}
	p.pid, p.epoch = initTxnAt(t, coord, 3, p.id)
	return p
}

// produceAt sends one Produce request at version v to c with a
// transactional batch of producer p at epoch for each of parts of topic,
// and returns the answer's partitions in order. A batch answered 0 moves its
// partition's sequence on.
func (p *tv2Producer) produceAt(t *testing.T, c *kconn, v int16, epoch int16, topic string, parts ...int32) []kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, &p.id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for _, part := range parts {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = part
		rp.Records = makeBatchAttrs(batchOpts{producerID: p.pid, epoch: epoch, seq: p.seqs[part]}, 0x10, fmt.Sprintf("%s-%d-%d", topic, part, p.seqs[part]))
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := c.do(req).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(parts) {
		t.Fatalf("produce answer %+v", resp.Topics)
	}
	for _, rp := range resp.Topics[0].Partitions {
		if rp.ErrorCode == 0 {
			p.seqs[rp.Partition]++
		}
	}
	return resp.Topics[0].Partitions
}

func (p *tv2Producer) end(t *testing.T, coord *kconn, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(4)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, p.epoch, commit
	return coord.do(req).(*kmsg.EndTxnResponse).ErrorCode
}

// bump sends InitProducerId with the producer's id and epoch (KIP-360), as a
// producer does to go on after an error, and takes the new epoch.
func (p *tv2Producer) bump(t *testing.T, coord *kconn) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	req.TransactionalID, req.TransactionTimeoutMillis = &p.id, 60000
	req.ProducerID, req.ProducerEpoch = p.pid, p.epoch
	resp := coord.do(req).(*kmsg.InitProducerIDResponse)
	wantCode(t, "InitProducerId bump", resp.ErrorCode, 0)
	if resp.ProducerID != p.pid || resp.ProducerEpoch <= p.epoch {
		t.Fatalf("bump of %d/%d answered %d/%d", p.pid, p.epoch, resp.ProducerID, resp.ProducerEpoch)
	}
	p.epoch = resp.ProducerEpoch
	clear(p.seqs)
}

// describeTxn returns the coordinator's view of the producer's transaction.
func (p *tv2Producer) describeTxn(t *testing.T, coord *kconn) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{p.id}
	resp := coord.do(req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 {
		t.Fatalf("DescribeTransactions answer %+v", resp.TransactionStates)
	}
	return resp.TransactionStates[0]
}

// inTxn reports whether the coordinator has partition of topic in the
// producer's open transaction at the producer's epoch.
func (p *tv2Producer) inTxn(t *testing.T, coord *kconn, topic string, partition int32) bool {
	st := p.describeTxn(t, coord)
	if st.State != "Ongoing" || st.ProducerEpoch != p.epoch {
		return false
	}
	for _, rt := range st.Topics {
		if rt.Topic == topic && slices.Contains(rt.Partitions, partition) {
			return true
		}
	}
	return false
}

// readCommitted returns the values a read_committed fetch of partition of
// topic returns from offset 0 (control batches and aborted ones left out).
func readCommitted(t *testing.T, c *kconn, topic string, partition int32) []string {
	t.Helper()
	req := fetchRequest(11, 0, 0, 1<<20, fetchPart{topic: topic, partition: partition})
	req.IsolationLevel = 1
	rp := fetchedPartition(t, c.do(req).(*kmsg.FetchResponse), topic, partition)
	wantCode(t, "read_committed fetch", rp.ErrorCode, 0)
	// As a consumer reads: a producer's batches from an aborted
	// transaction's first offset up to its marker are left out.
	pending := slices.Clone(rp.AbortedTransactions)
	slices.SortFunc(pending, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return int(a.FirstOffset - b.FirstOffset)
	})
	aborting := map[int64]bool{}
	batches, _ := decodeBatches(t, rp.RecordBatches)
	var out []string
	for _, b := range batches {
		for len(pending) > 0 && pending[0].FirstOffset <= b.FirstOffset {
			aborting[pending[0].ProducerID] = true
			pending = pending[1:]
		}
		if b.Attributes&0x20 != 0 {
			delete(aborting, b.ProducerID) // its marker ends it
			continue
		}
		if aborting[b.ProducerID] {
			continue
		}
		_, recs := decodeBatches(t, b.AppendTo(nil))
		out = append(out, values(recs)...)
	}
	return out
}

// settled waits until no transaction is open on partition of topic.
func settled(t *testing.T, c *kconn, topic string, partition int32) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("%s-%d's last stable offset to reach its end", topic, partition), func() bool {
		p := listOffsetsAt(t, c, 5, topic, partition, -1)
		req := listOffsetsRequest(5, topic, partition, -1)
		req.IsolationLevel = 1
		lso := c.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		return lso.ErrorCode == 0 && lso.Offset == p.Offset
	})
}

// TestTxnV2ProduceConformance: on a TxnV2 node, Produce v3..v12 and
// AddPartitionsToTxn v0..v5 pass the conformance checks of every version;
// v12's transactional cases answer their codes.
func TestTxnV2ProduceConformance(t *testing.T) {
	n := startTxnV2Node(t)
	c := dial(t, n.KafkaAddr())
	t.Run("Produce", func(t *testing.T) { conformProduce(t, c, []int16{3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) })
	t.Run("AddPartitionsToTxn", func(t *testing.T) { conformAddPartitionsToTxn(t, c, []int16{0, 1, 2, 3, 4, 5}) })
	t.Run("ProduceV12Txn", func(t *testing.T) { conformProduceV12Txn(t, c, n.ID()) })
	t.Run("AddPartitionsToTxnV5", func(t *testing.T) { conformAddPartitionsToTxnV5(t, c) })
}

// conformProduceV12Txn checks v12's transactional codes against the
// versions before it on one node.
func conformProduceV12Txn(t *testing.T, c *kconn, nodeID int32) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 2, nil)
	p := newTV2Producer(t, c, nodeID)

	// v12 adds the partition itself; v11 and v10 still need AddPartitionsToTxn.
	wantCode(t, "v10 without AddPartitionsToTxn", p.produceAt(t, c, 10, p.epoch, topic, 0)[0].ErrorCode, kerr.InvalidTxnState.Code)
	wantCode(t, "v11 without AddPartitionsToTxn", p.produceAt(t, c, 11, p.epoch, topic, 0)[0].ErrorCode, kerr.TransactionAbortable.Code)
	if end := logEnd(t, c, topic, 0); end != 0 {
		t.Fatalf("log end %d after refused batches", end)
	}
	if p.inTxn(t, c, topic, 0) {
		t.Fatalf("a refused v11 batch added its partition")
	}
	got := p.produceAt(t, c, 12, p.epoch, topic, 0)[0]
	wantCode(t, "v12 without AddPartitionsToTxn", got.ErrorCode, 0)
	if got.BaseOffset != 0 || !p.inTxn(t, c, topic, 0) {
		t.Fatalf("v12 batch at %d, in the transaction %v: want 0, true", got.BaseOffset, p.inTxn(t, c, topic, 0))
	}
	wantCode(t, "v12, the transaction open here", p.produceAt(t, c, 12, p.epoch, topic, 0)[0].ErrorCode, 0)
	// v11 after v12 on a partition in the transaction: verified, confirmed.
	wantCode(t, "v11, partition 0 added by v12", p.produceAt(t, c, 11, p.epoch, topic, 0)[0].ErrorCode, 0)

	// Another producer id for the transactional id: a real fence, passed through.
	other := *p
	other.pid, other.seqs = p.pid+1000, map[int32]int32{}
	wantCode(t, "v12 under another producer id", other.produceAt(t, c, 12, p.epoch, topic, 1)[0].ErrorCode, kerr.InvalidProducerIDMapping.Code)

	// A transactional batch needs a transactional id, at v12 too.
	req := produceRequest(12, -1, topic, 1, makeBatchAttrs(batchOpts{producerID: p.pid, epoch: p.epoch, seq: 0}, 0x10, "x"))
	wantCode(t, "v12 transactional batch without a transactional id", c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, kerr.InvalidTxnState.Code)
	if end := logEnd(t, c, topic, 1); end != 0 {
		t.Fatalf("log end of partition 1 %d after refused batches", end)
	}
	wantCode(t, "commit", p.end(t, c, true), 0)
	settled(t, c, topic, 0)
	if got := readCommitted(t, c, topic, 0); len(got) != 3 {
		t.Fatalf("read_committed %q, want the three committed records", got)
	}
}

// conformAddPartitionsToTxnV5 checks the brokers' add mode: a v5 entry
// without verify_only adds the partition (implicitly, as a leader asks for a
// v12 batch), which a v4 verify then confirms; a stale epoch is refused.
func conformAddPartitionsToTxnV5(t *testing.T, c *kconn) {
	f := newTxnFixture(t, c)
	wantCode(t, "verify before", f.addPartitionVerify(t, c, 4, f.epoch, f.topic, true).Topics[0].Partitions[0].ErrorCode, kerr.InvalidTxnState.Code)
	wantCode(t, "v5 add", f.addPartitionVerify(t, c, 5, f.epoch, f.topic, false).Topics[0].Partitions[0].ErrorCode, 0)
	wantCode(t, "verify after", f.addPartitionVerify(t, c, 4, f.epoch, f.topic, true).Topics[0].Partitions[0].ErrorCode, 0)
	wantCode(t, "v5 verify", f.addPartitionVerify(t, c, 5, f.epoch, f.topic, true).Topics[0].Partitions[0].ErrorCode, 0)
	wantCode(t, "v5 add, stale epoch", f.addPartitionVerify(t, c, 5, f.epoch-1, f.topic, false).Topics[0].Partitions[0].ErrorCode, kerr.InvalidProducerEpoch.Code)
	wantCode(t, "abort", f.end(t, c, 4, false), 0)
}

// TestTxnV2ProduceOneNode: the coordinator is local to every leader.
func TestTxnV2ProduceOneNode(t *testing.T) {
	n := startTxnV2Node(t)
	c := dial(t, n.KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c, topic, 3, nil)
	leaders := map[int32]*kconn{0: c, 1: c, 2: c}
	t.Run("Commit", func(t *testing.T) { txnV2Commit(t, c, n.ID(), leaders, topic, true) })
	t.Run("Fence", func(t *testing.T) { txnV2Fence(t, c, n.ID(), c, topic, 1) })
	t.Run("Hold", func(t *testing.T) { txnV2Hold(t, c, n.ID(), n.KafkaAddr(), topic, 2) })
	t.Run("Pipelined", func(t *testing.T) { txnV2Pipelined(t, dial(t, n.KafkaAddr()), n.ID()) })
}

// txnV2Pipelined: Produce requests pipelined behind one whose batch waits
// for its implicit add keep their order on the partition: the first (acks=0,
// never answered) opens the transaction off the connection's loop, the next
// two are appended after it, and a ListOffsets behind them sees all three.
func txnV2Pipelined(t *testing.T, c *kconn, coordID int32) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	p := newTV2Producer(t, c, coordID)
	var corrs []int32
	var reqs []*kmsg.ProduceRequest
	for seq, acks := range []int16{0, -1, 1} {
		req := produceRequest(12, acks, topic, 0, makeBatchAttrs(batchOpts{producerID: p.pid, epoch: p.epoch, seq: int32(seq)}, 0x10, fmt.Sprint(seq)))
		req.TransactionID = &p.id
		corrs = append(corrs, c.send(req))
		reqs = append(reqs, req)
	}
	for i := 1; i < 3; i++ {
		rp := c.recv(reqs[i], corrs[i]).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		wantCode(t, fmt.Sprintf("pipelined batch %d", i), rp.ErrorCode, 0)
		if rp.BaseOffset != int64(i) {
			t.Fatalf("pipelined batch %d at offset %d, want %d (after the batch that waited for its add)", i, rp.BaseOffset, i)
		}
	}
	if end := logEnd(t, c, topic, 0); end != 3 {
		t.Fatalf("log end %d, want 3", end)
	}
	wantCode(t, "commit", p.end(t, c, true), 0)
	settled(t, c, topic, 0)
	if got := readCommitted(t, c, topic, 0); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Fatalf("read_committed %q, want the three batches in order", got)
	}
}

// TestTxnV2ProduceThreeNodes: the coordinator is on one of three nodes, the
// leaders of a three-partition topic on all three: two of them add their
// partition with AddPartitionsToTxn v5 to the coordinator's broker.
func TestTxnV2ProduceThreeNodes(t *testing.T) {
	nodes := startTxnCluster(t, "tv2", 2, 2, 2)
	byID := map[int32]*appliance.Node{}
	for _, n := range nodes {
		byID[n.ID()] = n
	}
	c0 := dial(t, nodes[0].KafkaAddr())
	topic := topicName(t, "")
	createTopic(t, c0, topic, 3, nil)
	leaders := map[int32]*kconn{}
	addrs := map[int32]string{}
	waitFor(t, 30*time.Second, "leaders for the topic's partitions", func() bool {
		for _, p := range metadataTopic(t, c0, topic).Partitions {
			if n, ok := byID[p.Leader]; ok && p.ErrorCode == 0 {
				addrs[p.Partition] = n.KafkaAddr()
			}
		}
		return len(addrs) == 3
	})
	for part, addr := range addrs {
		leaders[part] = dial(t, addr)
	}

	// The coordinator of the subtests' transactional ids: that of a first id
	// (whose FindCoordinator creates __transaction_state); newTV2Producer
	// picks ids coordinated there.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(1)
	fc.CoordinatorKey, fc.CoordinatorType = topicName(t, "id"), 1
	coordID := findTxnCoordinator(t, c0, fc).NodeID
	coordNode, ok := byID[coordID]
	if !ok {
		t.Fatalf("coordinator %d is none of the nodes", coordID)
	}
	coord := dial(t, coordNode.KafkaAddr())
	var remote []int32
	for part, addr := range addrs {
		if addr != coordNode.KafkaAddr() {
			remote = append(remote, part)
		}
	}
	slices.Sort(remote)
	if len(remote) == 0 {
		t.Fatalf("every partition is led by the coordinator's broker %d: the test needs a remote one", coordID)
	}
	t.Logf("coordinator on broker %d; partitions %v led elsewhere", coordID, remote)
	t.Run("Commit", func(t *testing.T) { txnV2Commit(t, coord, coordID, leaders, topic, false) })
	t.Run("Fence", func(t *testing.T) { txnV2Fence(t, coord, coordID, leaders[remote[0]], topic, remote[0]) })
	t.Run("Hold", func(t *testing.T) { txnV2Hold(t, coord, coordID, addrs[remote[0]], topic, remote[0]) })
}

// txnV2Commit runs two committed transactions of a TV2 producer over the
// three partitions of topic without AddPartitionsToTxn (Produce v12 to each
// partition's leader; together in one request if together), EndTxn v4, and
// reads them back read_committed.
func txnV2Commit(t *testing.T, coord *kconn, coordID int32, leaders map[int32]*kconn, topic string, together bool) {
	p := newTV2Producer(t, coord, coordID)
	var want [3][]string
	for round := range 2 {
		if together {
			for i, rp := range p.produceAt(t, leaders[0], 12, p.epoch, topic, 0, 1, 2) {
				wantCode(t, fmt.Sprintf("round %d: v12 to partition %d", round, i), rp.ErrorCode, 0)
				want[i] = append(want[i], fmt.Sprintf("%s-%d-%d", topic, i, p.seqs[int32(i)]-1))
			}
		} else {
			for part := range int32(3) {
				wantCode(t, fmt.Sprintf("round %d: v12 to partition %d", round, part), p.produceAt(t, leaders[part], 12, p.epoch, topic, part)[0].ErrorCode, 0)
				want[part] = append(want[part], fmt.Sprintf("%s-%d-%d", topic, part, p.seqs[part]-1))
			}
		}
		for part := range int32(3) {
			if !p.inTxn(t, coord, topic, part) {
				t.Fatalf("round %d: partition %d not in the coordinator's transaction: %+v", round, part, p.describeTxn(t, coord))
			}
		}
		wantCode(t, fmt.Sprintf("round %d: commit", round), p.end(t, coord, true), 0)
		for part := range int32(3) {
			settled(t, leaders[part], topic, part)
		}
	}
	for part := range int32(3) {
		if got := readCommitted(t, leaders[part], topic, part); !slices.Equal(got, want[part]) {
			t.Fatalf("partition %d read_committed %q, want %q", part, got, want[part])
		}
	}
}

// txnV2Fence: a v12 batch at an epoch the coordinator has ended (the producer
// bumped it since) would open a transaction on partition: the coordinator
// refuses the implicit add, the batch is refused with
// INVALID_PRODUCER_EPOCH, and nothing is appended.
func txnV2Fence(t *testing.T, coord *kconn, coordID int32, leader *kconn, topic string, partition int32) {
	settled(t, leader, topic, partition)
	p := newTV2Producer(t, coord, coordID)
	old := p.epoch
	p.bump(t, coord)
	end := logEnd(t, leader, topic, partition)
	wantCode(t, "v12 at the ended epoch", p.produceAt(t, leader, 12, old, topic, partition)[0].ErrorCode, kerr.InvalidProducerEpoch.Code)
	if got := logEnd(t, leader, topic, partition); got != end {
		t.Fatalf("log end %d after the fenced batch, was %d", got, end)
	}
	if st := p.describeTxn(t, coord); st.State == "Ongoing" {
		t.Fatalf("the fenced batch opened a transaction: %+v", st)
	}
	// The current epoch goes on.
	wantCode(t, "v12 at the current epoch", p.produceAt(t, leader, 12, p.epoch, topic, partition)[0].ErrorCode, 0)
	wantCode(t, "abort", p.end(t, coord, false), 0)
	settled(t, leader, topic, partition)
}

// txnV2Hold: a v12 batch of a new epoch arrives while the producer's previous
// transaction is open on partition without its marker. The previous
// transaction is opened by hand (a marker's stamp and a notice, as an older
// coordinator would send them, then a v11 batch), so that no coordinator
// writes its marker: the test does. Added by the coordinator, the batch waits
// for that marker and lands right after it; without the marker it is
// answered CONCURRENT_TRANSACTIONS after the hold's second, appending
// nothing, and its retry after the marker lands.
func txnV2Hold(t *testing.T, coord *kconn, coordID int32, leaderAddr, topic string, partition int32) {
	leader := dial(t, leaderAddr)
	settled(t, leader, topic, partition)
	p := newTV2Producer(t, coord, coordID)
	old := p.epoch
	openByHand := func() {
		t.Helper()
		code, stamp := handMarker(t, leader, p, old, topic, partition)
		wantCode(t, "marker before the notice", code, 0)
		wantCode(t, "notice", handNotice(t, leader, p, old, topic, partition, stamp), 0)
		wantCode(t, "v11 batch under the notice", p.produceAt(t, leader, 11, old, topic, partition)[0].ErrorCode, 0)
	}
	openByHand()
	p.bump(t, coord) // the coordinator knows nothing of the open transaction

	// Without the marker: held a second, then CONCURRENT_TRANSACTIONS.
	end := logEnd(t, leader, topic, partition)
	start := time.Now()
	wantCode(t, "v12 held without a marker", p.produceAt(t, leader, 12, p.epoch, topic, partition)[0].ErrorCode, kerr.ConcurrentTransactions.Code)
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Fatalf("answered after %v, want the hold's second", took)
	}
	if got := logEnd(t, leader, topic, partition); got != end {
		t.Fatalf("log end %d after the held batch timed out, was %d", got, end)
	}

	// With the marker written while the batch waits. The batch is added
	// (the coordinator's record committed) before it waits, and cannot be
	// appended before the marker (AppendTV2 refuses that): it lands right
	// after it.
	second := dial(t, leaderAddr)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(12)
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, &p.id
	records := makeBatchAttrs(batchOpts{producerID: p.pid, epoch: p.epoch, seq: 0}, 0x10, "after the marker")
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: records}}}}
	corr := second.send(req)
	type answer struct {
		frame []byte
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		frame, err := second.readFrame(30 * time.Second)
		done <- answer{frame, err}
	}()
	waitFor(t, 10*time.Second, "the coordinator to add the partition at the new epoch", func() bool { return p.inTxn(t, coord, topic, partition) })
	select {
	case a := <-done:
		t.Fatalf("the batch was answered before the marker (%v)", a.err)
	default:
	}
	marker := logEnd(t, leader, topic, partition)
	code, _ := handMarker(t, leader, p, old, topic, partition)
	wantCode(t, "the previous transaction's marker", code, 0)
	a := <-done // bounded by the read's deadline
	if a.err != nil {
		t.Fatalf("the held batch's answer: %v", a.err)
	}
	resp, err := parseResponse(req.Key(), req.GetVersion(), corr, a.frame)
	if err != nil {
		t.Fatal(err)
	}
	rp := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	wantCode(t, "v12 held for the marker", rp.ErrorCode, 0)
	if rp.BaseOffset != marker+1 {
		t.Fatalf("held batch at %d, the marker at %d: want it right after", rp.BaseOffset, marker)
	}
	wantCode(t, "commit", p.end(t, coord, true), 0)
	settled(t, leader, topic, partition)
	if got := readCommitted(t, leader, topic, partition); !slices.Contains(got, "after the marker") {
		t.Fatalf("read_committed %q lacks the held batch", got)
	}
}

// handMarker writes an abort marker of p at epoch on partition of topic, as
// a coordinator at coordinator epoch 0 would, and returns its code and stamp.
func handMarker(t *testing.T, c *kconn, p *tv2Producer, epoch int16, topic string, partition int32) (int16, txn.Stamp) {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = p.pid, epoch, false, 0
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{partition}}}
	req.Markers = append(req.Markers, m)
	rp := c.do(req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0]
	s, _ := txn.TaggedStamp(&rp.UnknownTags)
	return rp.ErrorCode, s
}

// handNotice tells the leader that partition of topic is in p's transaction
// at epoch, at marker stamp s, as a TV1 coordinator does.
func handNotice(t *testing.T, c *kconn, p *tv2Producer, epoch int16, topic string, partition int32, s txn.Stamp) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch = p.pid, epoch, -1
	m.UnknownTags.Set(txn.NoticeTag, txn.AppendNotice(nil, txn.Notice{TopicPartition: txn.TopicPartition{Topic: topic, Partition: partition}, At: s}))
	req.Markers = append(req.Markers, m)
	return c.do(req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
}
