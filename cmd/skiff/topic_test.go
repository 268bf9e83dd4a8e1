package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestConfigList(t *testing.T) {
	var l configList
	for _, kv := range []string{"cleanup.policy=compact,delete", "a.b= x=y ", "empty="} {
		if err := l.Set(kv); err != nil {
			t.Fatalf("Set(%q): %v", kv, err)
		}
	}
	m, err := l.configs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cleanup.policy": "compact,delete", "a.b": " x=y ", "empty": ""}
	if len(m) != len(want) {
		t.Fatalf("configs = %v", m)
	}
	for k, v := range want {
		if m[k] == nil || *m[k] != v {
			t.Errorf("config %s = %v; want %q", k, m[k], v)
		}
	}

	for _, bad := range []string{"novalue", "=v", " =v"} {
		if err := new(configList).Set(bad); err == nil || !strings.Contains(err.Error(), "want KEY=VALUE") {
			t.Errorf("Set(%q): err = %v", bad, err)
		}
	}

	dup := configList{listFlag: listFlag{values: []string{"a=1", "a=2"}}}
	if _, err := dup.configs(); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("duplicate key: err = %v", err)
	}
	if m, err := new(configList).configs(); m != nil || err != nil {
		t.Errorf("no configs = %v, %v; want nil, nil", m, err)
	}
}

func TestTopicCreateFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create"}, "missing topic name"},
		{[]string{"topic", "create", "a", "b"}, `unexpected argument "b"`},
		{[]string{"topic", "create", "a", "--partitions", "0"}, "--partitions must be at least 1"},
		{[]string{"topic", "create", "a", "-r", "-5"}, "--replication-factor must be at least 1"},
		{[]string{"topic", "create", "a", "--config", "x"}, "want KEY=VALUE"},
		{[]string{"topic", "create", "a", "--config", "x=1", "--config", "x=2"}, "--config x given twice"},
		{[]string{"topic", "describe"}, "missing topic name"},
		{[]string{"topic", "delete", ""}, "topic name must not be empty"},
	} {
		_, _, err := runApp(nil, append(tc.args, "-b", "192.0.2.1:9")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v; want it to contain %q", tc.args, err, tc.want)
		}
	}
}

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
	offs := map[int32]offsetsOf{0: {hw: 1200, leo: 1203}, 1: {hw: -1, leo: -1}}
	if err := writeTopicDescription(&b, td, configs, offs); err != nil {
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
