package kafkaapi_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createPartitionsRequest asks to grow topic to count partitions at version v, with an
// explicit assignment when lists are given.
func createPartitionsRequest(v int16, validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.SetVersion(v)
	req.TimeoutMillis = 30000
	req.ValidateOnly = validateOnly
	req.Topics = topics
	return req
}

func growTopic(topic string, count int32, lists ...[]int32) kmsg.CreatePartitionsRequestTopic {
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	for _, l := range lists {
		rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: l})
	}
	return rt
}

// conformCreatePartitions grows a topic at each version: placed, with an explicit
// assignment, and validate_only; the new partitions are served at once (the answer
// waits for them), and records produced to them read back.
func conformCreatePartitions(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			do := func(validateOnly bool, rt kmsg.CreatePartitionsRequestTopic) kmsg.CreatePartitionsResponseTopic {
				t.Helper()
				resp := c.do(createPartitionsRequest(v, validateOnly, rt)).(*kmsg.CreatePartitionsResponse)
				if len(resp.Topics) != 1 || resp.Topics[0].Topic != rt.Topic {
					t.Fatalf("create partitions of %s: answer %+v", rt.Topic, resp.Topics)
				}
				if resp.ThrottleMillis != 0 {
					t.Errorf("throttle %d ms", resp.ThrottleMillis)
				}
				return resp.Topics[0]
			}
			name := topicName(t, "")
			createTopic(t, c, name, 1, nil)

			got := do(false, growTopic(name, 3))
			wantCode(t, "grow to 3", got.ErrorCode, 0)
			if got.ErrorMessage != nil {
				t.Errorf("error message %q on success", *got.ErrorMessage)
			}
			md := metadataTopic(t, c, name)
			if len(md.Partitions) != 3 {
				t.Fatalf("metadata right after the answer: %d partitions, want 3", len(md.Partitions))
			}
			for _, p := range md.Partitions {
				if p.ErrorCode != 0 || p.Leader != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
					t.Errorf("partition %d: %s, leader %d, replicas %v, ISR %v", p.Partition, errName(p.ErrorCode), p.Leader, p.Replicas, p.ISR)
				}
			}
			if off := mustProduce(t, c, name, 2, makeBatch(noProducer, "new")); off != 0 {
				t.Errorf("first record of new partition 2 at offset %d", off)
			}
			if off := logEnd(t, c, name, 2); off != 1 {
				t.Errorf("new partition 2 ends at %d, want 1", off)
			}

			wantCode(t, "validate_only to 5", do(true, growTopic(name, 5)).ErrorCode, 0)
			if md := metadataTopic(t, c, name); len(md.Partitions) != 3 {
				t.Fatalf("validate_only changed the topic: %d partitions", len(md.Partitions))
			}

			wantCode(t, "grow to 5 with an assignment", do(false, growTopic(name, 5, []int32{1}, []int32{1})).ErrorCode, 0)
			if md := metadataTopic(t, c, name); len(md.Partitions) != 5 {
				t.Fatalf("after growing with an assignment: %d partitions, want 5", len(md.Partitions))
			}

			same := do(false, growTopic(name, 5))
			wantCode(t, "grow to the same count", same.ErrorCode, kerr.InvalidPartitions.Code)
			if same.ErrorMessage == nil {
				t.Error("refused without an error message")
			}
		})
	}
}

// TestCreatePartitionsErrors checks each refusal, per topic, in one request alongside
// a topic that grows, and that no refused topic changed.
func TestCreatePartitionsErrors(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	// Every refusal names its own topic of 2 partitions: a topic listed twice in one
	// request is itself a refusal.
	var twos []string
	two := func() string {
		name := topicName(t, "two")
		twos = append(twos, name)
		createTopic(t, c, name, 2, nil)
		return name
	}
	good, dup := topicName(t, "good"), topicName(t, "dup")
	createTopic(t, c, good, 2, nil)
	createTopic(t, c, dup, 2, nil)
	for _, v := range []int16{0, 1} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			tests := []struct {
				topic kmsg.CreatePartitionsRequestTopic
				want  int16
			}{
				{growTopic(two(), 2), kerr.InvalidPartitions.Code},
				{growTopic(two(), 1), kerr.InvalidPartitions.Code},
				{growTopic(two(), 10001), kerr.InvalidPartitions.Code},
				{growTopic(two(), 4, []int32{1}), kerr.InvalidReplicaAssignment.Code},
				{growTopic(two(), 3, []int32{7}), kerr.InvalidReplicaAssignment.Code},
				{growTopic(two(), 3, []int32{1, 1}), kerr.InvalidReplicaAssignment.Code},
				{growTopic(two(), 3, []int32{}), kerr.InvalidReplicaAssignment.Code},
				{growTopic(topicName(t, "missing"), 3), kerr.UnknownTopicOrPartition.Code},
				{growTopic("bad/name", 3), kerr.UnknownTopicOrPartition.Code},
				{growTopic("__consumer_offsets", 100), kerr.InvalidRequest.Code},
				{growTopic(dup, 3), kerr.InvalidRequest.Code},
				{growTopic(dup, 4), kerr.InvalidRequest.Code},
				{growTopic(good, int32(3+v)), 0},
			}
			for _, validateOnly := range []bool{true, false} {
				req := createPartitionsRequest(v, validateOnly)
				for _, tc := range tests {
					req.Topics = append(req.Topics, tc.topic)
				}
				resp := c.do(req).(*kmsg.CreatePartitionsResponse)
				if len(resp.Topics) != len(tests) {
					t.Fatalf("%d answers to %d topics", len(resp.Topics), len(tests))
				}
				for i, tc := range tests {
					got := resp.Topics[i]
					if got.Topic != tc.topic.Topic {
						t.Fatalf("answer %d names %s, want %s", i, got.Topic, tc.topic.Topic)
					}
					what := fmt.Sprintf("%s to %d %v (validate_only %v)", tc.topic.Topic, tc.topic.Count, tc.topic.Assignment, validateOnly)
					if got.ErrorCode != tc.want {
						msg := ""
						if got.ErrorMessage != nil {
							msg = *got.ErrorMessage
						}
						t.Errorf("%s: %s %q, want %s", what, errName(got.ErrorCode), msg, errName(tc.want))
					}
					if tc.want != 0 && got.ErrorMessage == nil {
						t.Errorf("%s: refused without an error message", what)
					}
				}
			}
			want := map[string]int{dup: 2, good: 3 + int(v)}
			for _, name := range twos {
				want[name] = 2
			}
			for name, n := range want {
				if md := metadataTopic(t, c, name); len(md.Partitions) != n {
					t.Errorf("%s has %d partitions, want %d", name, len(md.Partitions), n)
				}
			}
		})
	}
}
