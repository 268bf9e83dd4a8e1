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

func addPartitionsCodes(resp kmsg.Response) (out []int16) {
	for _, t := range resp.(*kmsg.AddPartitionsToTxnResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// addPartitionsRequest adds the run's partition to the run's transaction (v3).
func addPartitionsRequest(r *refusalRun) kmsg.Request {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = r.group, r.pid, r.epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: r.topic, Partitions: []int32{0}}}
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
			setup:  txnSetup,
			req:    addPartitionsRequest,
			codes:  addPartitionsCodes,
			grants: []string{txnWrite, "ALLOW WRITE TOPIC LITERAL TOPIC_NAME"}},
		{name: "AddPartitionsToTxn needs WRITE on the topic", want: kerr.TopicAuthorizationFailed.Code,
			setup: txnSetup, given: []string{txnWrite},
			req:    addPartitionsRequest,
			codes:  addPartitionsCodes,
			grants: []string{txnWrite, "ALLOW WRITE TOPIC LITERAL TOPIC_NAME"}},
		{name: "AddOffsetsToTxn needs WRITE on the transactional id", want: kerr.TransactionalIDAuthorizationFailed.Code,
			setup:  txnSetup,
			req:    addOffsetsRequest,
			codes:  topLevel(func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode }),
			grants: []string{txnWrite, "ALLOW READ GROUP LITERAL GROUP_NAME"}},
		{name: "AddOffsetsToTxn needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			setup: txnSetup, given: []string{txnWrite},
			req:    addOffsetsRequest,
			codes:  topLevel(func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode }),
			grants: []string{txnWrite, "ALLOW READ GROUP LITERAL GROUP_NAME"}},
		{name: "EndTxn needs WRITE on the transactional id", want: kerr.TransactionalIDAuthorizationFailed.Code,
			setup: txnSetup,
			req: func(r *refusalRun) kmsg.Request {
				req := kmsg.NewPtrEndTxnRequest()
				req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = r.group, r.pid, r.epoch, true
				return req
			},
			codes:  topLevel(func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode }),
			grants: []string{txnWrite}, aliceWant: kerr.InvalidTxnState.Code}, // no transaction open
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
		{name: "TxnOffsetCommit needs WRITE on the transactional id", want: kerr.TransactionalIDAuthorizationFailed.Code,
			setup: txnSetup,
			req:   txnOffsetCommitRequest, codes: txnOffsetCommitCodes,
			grants: txnOffsetCommitGrants,
			// Authorized, then verified: no AddOffsetsToTxn (KIP-890 part 1, v4).
			aliceWant: kerr.TransactionAbortable.Code},
		{name: "TxnOffsetCommit needs READ on the group", want: kerr.GroupAuthorizationFailed.Code,
			setup: txnSetup, given: []string{txnWrite},
			req: txnOffsetCommitRequest, codes: txnOffsetCommitCodes,
			grants: txnOffsetCommitGrants, aliceWant: kerr.TransactionAbortable.Code},
		{name: "TxnOffsetCommit needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
			setup: txnSetup, given: []string{txnWrite, "ALLOW READ GROUP LITERAL GROUP_NAME"},
			req: txnOffsetCommitRequest, codes: txnOffsetCommitCodes,
			grants: txnOffsetCommitGrants, aliceWant: kerr.TransactionAbortable.Code},
		{name: "DescribeProducers needs READ on the topic", want: kerr.TopicAuthorizationFailed.Code,
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
			setup: txnSetup,
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
