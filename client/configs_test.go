package client

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestConfigChangesAlterations(t *testing.T) {
	ch := ConfigChanges{Set: map[string]string{"segment.ms": "1000", "cleanup.policy": "compact,delete"}, Delete: []string{"retention.ms"}}
	got := ch.alterations()
	want := []struct {
		name string
		op   kadm.IncrementalOp
		v    string
	}{{"cleanup.policy", kadm.SetConfig, "compact,delete"}, {"retention.ms", kadm.DeleteConfig, ""}, {"segment.ms", kadm.SetConfig, "1000"}}
	if len(got) != len(want) {
		t.Fatalf("%d alterations, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if g := got[i]; g.Name != w.name || g.Op != w.op || (w.op == kadm.SetConfig) != (g.Value != nil) || (g.Value != nil && *g.Value != w.v) {
			t.Errorf("alteration %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestWriteBrokerConfigs(t *testing.T) {
	var b strings.Builder
	err := WriteBrokerConfigs(&b, []kmsg.DescribeConfigsResponseResourceConfig{
		{Name: "num.partitions", Value: kmsg.StringPtr("3"), Source: kmsg.ConfigSourceDynamicBrokerConfig},
		{Name: "auto.create.topics.enable", Value: kmsg.StringPtr("false"), Source: kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{Name: "sasl.secret", Value: kmsg.StringPtr("x"), IsSensitive: true, ReadOnly: true, Source: kmsg.ConfigSourceStaticBrokerConfig},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "CONFIG                     VALUE        SOURCE              DYNAMIC\n" +
		"auto.create.topics.enable  false        cluster             yes\n" +
		"num.partitions             3            broker              yes\n" +
		"sasl.secret                (sensitive)  broker config file  no\n"
	if b.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", b.String(), want)
	}
}
