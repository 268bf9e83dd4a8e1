package kafkaapi_test

// ElectLeaders (key 43) on one node: every answer that needs no controller
// decision, at each version. Elections that move leaders are tested on a
// cluster (e2e/elect_leaders_test.go).

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { conformanceTests[43] = conformElectLeaders }

func conformElectLeaders(t *testing.T, c *kconn, versions []int16) {
	topic := topicName(t, "")
	createTopic(t, c, topic, 2, nil)
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			elect := func(typ int8, topics []kmsg.ElectLeadersRequestTopic) *kmsg.ElectLeadersResponse {
				req := kmsg.NewPtrElectLeadersRequest()
				req.SetVersion(v)
				req.ElectionType, req.Topics, req.TimeoutMillis = typ, topics, 5000
				return c.do(req).(*kmsg.ElectLeadersResponse)
			}
			named := []kmsg.ElectLeadersRequestTopic{{Topic: topic, Partitions: []int32{1, 0, 9}}, {Topic: topic + "-none", Partitions: []int32{0}}}
			types := map[int8]int16{0: kerr.ElectionNotNeeded.Code} // the one replica leads
			if v >= 1 {
				types[1] = kerr.ElectionNotNeeded.Code // a replica leads
				types[5] = kerr.InvalidRequest.Code
			}
			for typ, want := range types {
				resp := elect(typ, named)
				wantCode(t, "ElectLeaders", resp.ErrorCode, 0)
				if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 3 || len(resp.Topics[1].Partitions) != 1 {
					t.Fatalf("type %d: answer %+v, want the 4 partitions named", typ, resp.Topics)
				}
				for i, p := range resp.Topics[0].Partitions {
					code := want
					if p.Partition == 9 && typ != 5 {
						code = kerr.UnknownTopicOrPartition.Code
					}
					if p.Partition != named[0].Partitions[i] {
						t.Errorf("type %d: partition %d listed as %d", typ, named[0].Partitions[i], p.Partition)
					}
					wantCode(t, fmt.Sprintf("type %d, partition %d", typ, p.Partition), p.ErrorCode, code)
				}
				if typ != 5 {
					wantCode(t, fmt.Sprintf("type %d, unknown topic", typ), resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
				}
			}
			// Every partition: each one's leader is its preferred replica, so none is listed.
			if resp := elect(0, nil); len(resp.Topics) != 0 {
				t.Errorf("all partitions: %+v, want none listed (no election needed)", resp.Topics)
			}
		})
	}
}
