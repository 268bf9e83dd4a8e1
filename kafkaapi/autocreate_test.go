package kafkaapi_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAutoCreateRace asks two connections at once for the same unknown topic, with
// auto-creation allowed: one request creates it, the other finds it being created,
// and both must answer with the topic, served here.
func TestAutoCreateRace(t *testing.T) {
	n := sharedNode(t)
	a, b := dial(t, n.KafkaAddr()), dial(t, n.KafkaAddr())
	for i := range 10 {
		name := topicName(t, fmt.Sprint(i))
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(8)
		req.AllowAutoTopicCreation = true
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(name)}}
		ca, cb := a.send(req), b.send(req)
		for _, r := range []struct {
			c    *kconn
			corr int32
		}{{a, ca}, {b, cb}} {
			resp := r.c.recv(req, r.corr).(*kmsg.MetadataResponse)
			if len(resp.Topics) != 1 {
				t.Fatalf("%s: %d topics", name, len(resp.Topics))
			}
			rt := resp.Topics[0]
			if rt.ErrorCode != 0 || len(rt.Partitions) != 1 || rt.Partitions[0].Leader != 1 {
				t.Fatalf("%s: %s, %d partitions; want it created, led by 1", name, errName(rt.ErrorCode), len(rt.Partitions))
			}
		}
		// Served at once by both.
		for _, c := range []*kconn{a, b} {
			if end := logEnd(t, c, name, 0); end != 0 {
				t.Fatalf("%s: log end %d", name, end)
			}
		}
	}
}
