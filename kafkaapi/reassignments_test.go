package kafkaapi_test

// AlterPartitionReassignments (45) and ListPartitionReassignments (46) on one
// node: every answer that needs no second broker, at each version. Moving
// replicas is tested on a cluster (e2e/reassign_test.go).

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	conformanceTests[45] = conformAlterPartitionReassignments
	conformanceTests[46] = conformListPartitionReassignments
}

func conformAlterPartitionReassignments(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			req.SetVersion(v)
			req.AllowReplicationFactorChange = v == 0 // v1 refuses a change of count
			part := func(p int32, replicas []int32) kmsg.AlterPartitionAssignmentsRequestTopicPartition {
				return kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: p, Replicas: replicas}
			}
			cases := []struct {
				p        kmsg.AlterPartitionAssignmentsRequestTopicPartition
				want     int16
				hasMsg   bool
				describe string
			}{
				{part(0, []int32{1}), 0, false, "the replicas it has"},
				{part(0, []int32{7}), kerr.InvalidReplicaAssignment.Code, true, "a broker that is not live"},
				{part(0, []int32{1, 1}), kerr.InvalidReplicaAssignment.Code, true, "a broker twice"},
				{part(0, []int32{}), kerr.InvalidReplicaAssignment.Code, true, "no replica"},
				{part(0, nil), kerr.NoReassignmentInProgress.Code, true, "a cancel of none"},
				{part(3, []int32{1}), kerr.UnknownTopicOrPartition.Code, false, "an unknown partition"},
			}
			if v >= 1 {
				// The count check comes first.
				cases[2].want, cases[3].want = kerr.InvalidReplicationFactor.Code, kerr.InvalidReplicationFactor.Code
			}
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = topic
			for _, cs := range cases {
				rt.Partitions = append(rt.Partitions, cs.p)
			}
			req.Topics = append(req.Topics, rt)
			resp := c.do(req).(*kmsg.AlterPartitionAssignmentsResponse)
			wantCode(t, "AlterPartitionReassignments", resp.ErrorCode, 0)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(cases) {
				t.Fatalf("answer %+v, want %d partitions", resp.Topics, len(cases))
			}
			for i, p := range resp.Topics[0].Partitions {
				wantCode(t, cases[i].describe, p.ErrorCode, cases[i].want)
				if (p.ErrorMessage != nil) != cases[i].hasMsg {
					t.Errorf("%s: message %v", cases[i].describe, p.ErrorMessage)
				}
			}
		})
	}
}

func conformListPartitionReassignments(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 1, nil)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrListPartitionReassignmentsRequest()
			req.SetVersion(v)
			resp := c.do(req).(*kmsg.ListPartitionReassignmentsResponse)
			wantCode(t, "all", resp.ErrorCode, 0)
			if len(resp.Topics) != 0 {
				t.Errorf("all: %+v, want no reassignment on one node", resp.Topics)
			}
			req.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{{Topic: topic, Partitions: []int32{0, 5}}}
			resp = c.do(req).(*kmsg.ListPartitionReassignmentsResponse)
			wantCode(t, "named", resp.ErrorCode, 0)
			if len(resp.Topics) != 0 {
				t.Errorf("named: %+v, want none listed", resp.Topics)
			}
		})
	}
}
