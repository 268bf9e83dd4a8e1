package client

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestWriteTopicDescription(t *testing.T) {
	v := func(s string) *string { return &s }
	td := kadm.TopicDetail{
		Topic: "orders",
		ID:    kadm.TopicID{0xde, 0xad, 0xbe, 0xef},
		Partitions: kadm.PartitionDetails{
			1: {Partition: 1, Leader: -1, LeaderEpoch: 7, Replicas: []int32{2, 3}, ISR: nil, OfflineReplicas: []int32{2, 3},
				Err: kerr.LeaderNotAvailable},
			0: {Partition: 0, Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}},
		},
	}
	configs := []kadm.Config{
		{Key: "retention.ms", Value: v("86400000"), Source: kmsg.ConfigSourceDynamicTopicConfig},
		{Key: "cleanup.policy", Value: v("delete"), Source: kmsg.ConfigSourceDefaultConfig},
		{Key: "secret", Sensitive: true, Source: kmsg.ConfigSourceStaticBrokerConfig},
	}
	var b bytes.Buffer
	offs := map[int32]PartitionOffsets{0: {HW: 1200, LEO: 1203}, 1: {HW: -1, LEO: -1}}
	if err := WriteTopicDescription(&b, td, configs, offs); err != nil {
		t.Fatal(err)
	}
	want := `topic:               orders
id:                  3q2-7wAAAAAAAAAAAAAAAA
partitions:          2
replication factor:  3

PARTITION  LEADER  EPOCH  REPLICAS  ISR  OFFLINE  HIGH WATERMARK  LOG END  ERROR
0          1       4      1,2,3     1,2  -        1200            1203     -
1          none    7      2,3       -    2,3      -               -        ` + kerr.LeaderNotAvailable.Error() + `

CONFIG          VALUE        SOURCE
cleanup.policy  delete       default
retention.ms    86400000     topic
secret          (sensitive)  broker config file
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
