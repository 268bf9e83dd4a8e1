package kafkaapi_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestACLConsumerRegex: a KIP-848 member's regex subscription matches only the
// topics its principal may DESCRIBE (Kafka's KAFKA-18813); a right granted later
// is taken at its next heartbeat.
func TestACLConsumerRegex(t *testing.T) {
	p := topicName(t, "")
	a, b := p+"-a", p+"-b"
	aclTopics(t, a, b)
	group, who := p+"-group", "regex-"+p
	createACLUser(t, who)
	grant(t, who, "ALLOW READ GROUP LITERAL "+group, "ALLOW DESCRIBE TOPIC LITERAL "+a)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := aclAdmin(t)
	if err := adm.FindGroupCoordinators(ctx, group).Error(); err != nil {
		t.Fatal(err)
	}
	tds, err := adm.ListTopics(ctx, a, b)
	if err != nil {
		t.Fatal(err)
	}
	names := map[[16]byte]string{tds[a].ID: a, tds[b].ID: b}

	cl := aclUserClient(t, who)
	member := "m-" + p
	var owned []kmsg.ConsumerGroupHeartbeatRequestTopic
	beat := func(epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
		req.Topics = owned
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 60000
			req.SubscribedTopicRegex = kmsg.StringPtr(regexp.QuoteMeta(p) + "-.*")
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		return aclRequest[*kmsg.ConsumerGroupHeartbeatResponse](t, cl, req)
	}
	// assigned takes the assignment of resp and returns its topics' names.
	assigned := func(resp *kmsg.ConsumerGroupHeartbeatResponse) map[string]int {
		t.Helper()
		wantCode(t, "heartbeat", resp.ErrorCode, 0)
		if resp.Assignment == nil {
			t.Fatal("no assignment in the answer")
		}
		out := map[string]int{}
		owned = owned[:0]
		for _, at := range resp.Assignment.Topics {
			out[names[at.TopicID]] = len(at.Partitions)
			owned = append(owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: at.TopicID, Partitions: at.Partitions})
		}
		return out
	}

	var resp *kmsg.ConsumerGroupHeartbeatResponse
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp = beat(0)
		retry := resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code || resp.ErrorCode == kerr.CoordinatorNotAvailable.Code
		if !retry || time.Now().After(deadline) {
			break
		}
	}
	if got := assigned(resp); len(got) != 1 || got[a] != 1 {
		t.Fatalf("with DESCRIBE on %s only, the regex assigned %v", a, got)
	}
	grant(t, who, "ALLOW DESCRIBE TOPIC LITERAL "+b)
	if got := assigned(beat(resp.MemberEpoch)); len(got) != 2 || got[a] != 1 || got[b] != 1 {
		t.Fatalf("after DESCRIBE on %s is granted, the regex assigned %v", b, got)
	}
}
