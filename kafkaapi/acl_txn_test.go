package kafkaapi_test

// The authorization of the transaction keys (cases of TestACLRefusals).

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnIDOfRun initializes the run's group name as a transactional id, as the super
// user, and returns its producer id and epoch: the coordinator then serves it.
func txnIDOfRun(t *testing.T, r *refusalRun) (int64, int16) {
	t.Helper()
	startACLNode(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(aclNode.addrs["PLAINTEXT"]), kgo.TransactionalID(r.group), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("init transactional id %s: %v", r.group, err)
	}
	r.pid, r.epoch = pid, epoch
	return pid, epoch
}

func txnSetup(t *testing.T, r *refusalRun) { txnIDOfRun(t, r) }

// txnOpenSetup is txnSetup, then the super user adds the run's partition to a
// transaction of the id: Ongoing.
func txnOpenSetup(t *testing.T, r *refusalRun) {
	txnSetup(t, r)
	for _, code := range addPartitionsCodes(aclRequest[*kmsg.AddPartitionsToTxnResponse](t, aclAdminClient(t), addPartitionsRequest(r))) {
		if code != 0 {
			t.Fatalf("open a transaction: %s", errName(code))
		}
	}
	txnIs("Ongoing", 1)(t, r)
}

// txnOffsetsSetup is txnSetup, then the super user adds the run's group to a
// transaction of the id (AddOffsetsToTxn), so that a TxnOffsetCommit passes
// its verification.
func txnOffsetsSetup(t *testing.T, r *refusalRun) {
	txnSetup(t, r)
	if code := aclRequest[*kmsg.AddOffsetsToTxnResponse](t, aclAdminClient(t), addOffsetsRequest(r)).ErrorCode; code != 0 {
		t.Fatalf("add the group to a transaction: %s", errName(code))
	}
}

// txnIs checks, as the super user, the run's transactional id: still at the
// producer id and epoch txnSetup got, in state, with partitions partitions in
// its transaction.
func txnIs(state string, partitions int) func(t *testing.T, r *refusalRun) {
	return func(t *testing.T, r *refusalRun) {
		t.Helper()
		ds, err := r.adm.DescribeTransactions(refusalCtx(t), r.group)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := ds[r.group]
		if !ok || d.Err != nil {
			t.Fatalf("describe transactional id %s: %v", r.group, d.Err)
		}
		n := 0
		for _, ps := range d.Topics {
			n += len(ps)
		}
		if d.ProducerID != r.pid || d.ProducerEpoch != r.epoch || d.State != state || n != partitions {
			t.Fatalf("transactional id %s: producer %d epoch %d, %s with %d partitions; want %d epoch %d, %s with %d",
				r.group, d.ProducerID, d.ProducerEpoch, d.State, n, r.pid, r.epoch, state, partitions)
		}
	}
}

// noPendingCommit checks, as the super user, that the run's group has no
// transactional commit pending (OffsetFetch with require_stable) and still its
// offset 1.
func noPendingCommit(t *testing.T, r *refusalRun) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	req.Group = r.group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: r.topic, Partitions: []int32{0}}}
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: r.group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: r.topic, Partitions: []int32{0}}}}} // v8+
	resp := aclRequest[*kmsg.OffsetFetchResponse](t, aclAdminClient(t), req)
	code, topics := resp.ErrorCode, resp.Topics
	if len(resp.Groups) == 1 { // v8+
		code = resp.Groups[0].ErrorCode
		topics = nil
		for _, gt := range resp.Groups[0].Topics {
			rt := kmsg.OffsetFetchResponseTopic{Topic: gt.Topic}
			for _, gp := range gt.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{Partition: gp.Partition, Offset: gp.Offset, ErrorCode: gp.ErrorCode})
			}
			topics = append(topics, rt)
		}
	}
	if code != 0 || len(topics) != 1 || len(topics[0].Partitions) != 1 {
		t.Fatalf("stable offsets of group %s: %s, %+v", r.group, errName(code), topics)
	}
	if p := topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 1 {
		t.Fatalf("group %s: offset %d (%s), want 1 and nothing pending", r.group, p.Offset, errName(p.ErrorCode))
	}
}

// addPartitionsCodes are the codes of the answer's partitions, of v3 or v4
// (one transaction); -1 if it names none (an answer that says nothing).
func addPartitionsCodes(resp kmsg.Response) (out []int16) {
	r := resp.(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	for _, tx := range r.Transactions {
		for _, t := range tx.Topics {
			for _, p := range t.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
	}
	if r.ErrorCode != 0 {
		out = append(out, r.ErrorCode)
	}
	if len(out) == 0 {
		return []int16{-1}
	}
	return out
}

// addPartitionsRequest adds the run's partition to the run's transaction: v3's
// fields, and the same as v4's one transaction (franz-go sends the highest
// version the node serves, whatever the request's).
func addPartitionsRequest(r *refusalRun) kmsg.Request {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = r.group, r.pid, r.epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: r.topic, Partitions: []int32{0}}}
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = r.group, r.pid, r.epoch
	tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: r.topic, Partitions: []int32{0}}}
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tx}
	return req
}

func addOffsetsRequest(r *refusalRun) kmsg.Request {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = r.group, r.pid, r.epoch, r.group
	return req
}

func txnOffsetCommitRequest(r *refusalRun) kmsg.Request {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = r.group, r.group, r.pid, r.epoch, -1
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Offset = 1
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: r.topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
	return req
}

func txnOffsetCommitCodes(resp kmsg.Response) []int16 {
	return []int16{resp.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode}
}

// txnOffsetCommitGrants are the three rights TxnOffsetCommit checks, in order.
var txnOffsetCommitGrants = []string{"ALLOW WRITE TRANSACTIONAL_ID LITERAL GROUP_NAME", "ALLOW READ GROUP LITERAL GROUP_NAME", "ALLOW READ TOPIC LITERAL TOPIC_NAME"}

func txnRefusals() []refusal {
	txnWrite := "ALLOW WRITE TRANSACTIONAL_ID LITERAL GROUP_NAME"
	return []refusal{
		{name: "AddPartitionsToTxn needs WRITE on the transactional id", want: kerr.TransactionalIDAuthorizationFailed.Code,
			setup:     txnSetup,
			req:       addPartitionsRequest,
			codes:     addPartitionsCodes,
			unchanged: txnIs("Empty", 0),
			grants:    []string{txnWrite, "ALLOW WRITE TOPIC LITERAL TOPIC_NAME"}},
		{name: "AddPartitionsToTxn needs WRITE on the topic", want: kerr.TopicAuthorizationFailed.Code,
			setup: txnSetup, given: []string{txnWrite},
			req:       addPartitionsRequest,
			codes:     addPartitionsCodes,
			unchanged: txnIs("Empty", 0),
			grants:    []string{txnWrite, "ALLOW WRITE TOPIC LITERAL TOPIC_NAME"}},
		{name: "AddOffsetsToTxn needs WRITE on the transactional id", want: kerr.TransactionalIDAuthorizationFailed.Code,
			setup:     txnSetup,
			req:       addOffsetsRequest,
			codes:     topLevel(func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode }),
			unchanged: txnIs("Empty", 0),
			grants:    []string{txnWrite, "ALLOW READ GROUP LITERAL GROUP_NAME"}},
		{name: "AddOffsetsToTxn needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			setup: txnSetup, given: []string{txnWrite},
			req:       addOffsetsRequest,
			codes:     topLevel(func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode }),
			unchanged: txnIs("Empty", 0),
			grants:    []string{txnWrite, "ALLOW READ GROUP LITERAL GROUP_NAME"}},
		{name: "EndTxn needs WRITE on the transactional id", want: kerr.TransactionalIDAuthorizationFailed.Code,
			setup: txnOpenSetup, // a transaction mallory's EndTxn would commit
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrEndTxnRequest()
				req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = r.group, r.pid, r.epoch, true
				return req
			},
			codes:     topLevel(func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode }),
			unchanged: txnIs("Ongoing", 1),
			grants:    []string{txnWrite}}, // alice commits it
		{name: "WriteTxnMarkers needs CLUSTER_ACTION on the cluster", want: kerr.ClusterAuthorizationFailed.Code,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch = 4242, 0
				m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: r.topic, Partitions: []int32{0}}}
				req.Markers = append(req.Markers, m)
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode}
			},
			unchanged: endOffsetIs(1),
			grants:    []string{"ALLOW CLUSTER_ACTION CLUSTER LITERAL kafka-cluster"}},
		// The super user added the group to the transaction (txnOffsetsSetup):
		// allowed, the commit would be pending, then alice's is.
		{name: "TxnOffsetCommit needs WRITE on the transactional id", want: kerr.TransactionalIDAuthorizationFailed.Code,
			setup: txnOffsetsSetup,
			req:   txnOffsetCommitRequest, codes: txnOffsetCommitCodes,
			unchanged: noPendingCommit,
			grants:    txnOffsetCommitGrants},
		{name: "TxnOffsetCommit needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			setup: txnOffsetsSetup, given: []string{txnWrite},
			req: txnOffsetCommitRequest, codes: txnOffsetCommitCodes,
			unchanged: noPendingCommit,
			grants:    txnOffsetCommitGrants},
		{name: "TxnOffsetCommit needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
			setup: txnOffsetsSetup, given: []string{txnWrite, "ALLOW READ GROUP LITERAL GROUP_NAME"},
			req: txnOffsetCommitRequest, codes: txnOffsetCommitCodes,
			unchanged: noPendingCommit,
			grants:    txnOffsetCommitGrants},
		{name: "DescribeProducers needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
			writesNothing: "a read",
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDescribeProducersRequest()
				req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: r.topic, Partitions: []int32{0}}}
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode}
			},
			grants: []string{"ALLOW READ TOPIC LITERAL TOPIC_NAME"}},
		{name: "DescribeTransactions needs DESCRIBE on the transactional id", want: kerr.TransactionalIDAuthorizationFailed.Code,
			writesNothing: "a read",
			setup:         txnSetup,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrDescribeTransactionsRequest()
				req.TransactionalIDs = []string{r.group}
				return req
			},
			codes: func(resp kmsg.Response) []int16 {
				return []int16{resp.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode}
			},
			grants: []string{"ALLOW DESCRIBE TRANSACTIONAL_ID LITERAL GROUP_NAME"}},
	}
}

// TestListTransactionsACL: kadm's ListTransactions as a user lists only the
// transactional ids the user may DESCRIBE, as in Kafka; the super user lists
// them all.
func TestListTransactionsACL(t *testing.T) {
	startACLNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen, hidden := topicName(t, "seen"), topicName(t, "hidden")
	for _, id := range []string{seen, hidden} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(aclNode.addrs["PLAINTEXT"]), kgo.TransactionalID(id), kgo.RetryTimeout(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = cl.ProducerID(ctx)
		cl.Close()
		if err != nil {
			t.Fatalf("init transactional id %s: %v", id, err)
		}
	}
	grant(t, aclAlice, "ALLOW DESCRIBE TRANSACTIONAL_ID LITERAL "+seen)
	list := func(cl *kgo.Client) []string {
		t.Helper()
		ls, err := kadm.NewClient(cl).ListTransactions(ctx, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, id := range ls.TransactionalIDs() {
			if id == seen || id == hidden {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := list(aclAdminClient(t)), []string{hidden, seen}; !slices.Equal(got, want) {
		t.Fatalf("the super user lists %v, want %v", got, want)
	}
	if got := list(aclUserClient(t, aclAlice)); !slices.Equal(got, []string{seen}) {
		t.Fatalf("alice lists %v, want only %s", got, seen)
	}
	if got := list(aclUserClient(t, aclMallory)); len(got) != 0 {
		t.Fatalf("mallory lists %v, want none", got)
	}
}
