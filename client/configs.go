package client

// Changing configs while a cluster runs, as `skiff topic alter-config`,
// `skiff topic delete-records`, `skiff config alter` and `skiff config describe`
// do it, through the admin API (IncrementalAlterConfigs, DeleteRecords,
// DescribeConfigs) as any Kafka client would.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AllBrokers stands for every broker (Kafka's cluster-wide default, broker
// resource "") where a broker id is asked for.
const AllBrokers int32 = -1

// ConfigChanges are the configs to set (name to value) and to delete, back to
// their defaults.
type ConfigChanges struct {
	Set    map[string]string
	Delete []string
}

// NewConfigChanges are the changes of skiff's --set (set) and --delete (del)
// flags; a key in both, or no key at all, is an error.
func NewConfigChanges(set map[string]*string, del []string) (ConfigChanges, error) {
	ch := ConfigChanges{Set: map[string]string{}}
	for k, v := range set {
		ch.Set[k] = *v
	}
	for _, k := range del {
		k = strings.TrimSpace(k)
		if _, both := set[k]; both {
			return ConfigChanges{}, fmt.Errorf("%s is given to both --set and --delete", k)
		}
		ch.Delete = append(ch.Delete, k)
	}
	if len(ch.Set)+len(ch.Delete) == 0 {
		return ConfigChanges{}, errors.New("nothing to change: give --set KEY=VALUE or --delete KEY")
	}
	return ch, nil
}

// alterations returns the changes as kadm's, sorted by name.
func (ch ConfigChanges) alterations() []kadm.AlterConfig {
	var out []kadm.AlterConfig
	for k, v := range ch.Set {
		out = append(out, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kmsg.StringPtr(v)})
	}
	for _, k := range ch.Delete {
		out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AlterTopicConfigs changes the configs of topic, all at once or none
// (IncrementalAlterConfigs).
func (k *Client) AlterTopicConfigs(ctx context.Context, topic string, ch ConfigChanges) error {
	rs, err := k.admin.AlterTopicConfigs(ctx, ch.alterations(), topic)
	if err != nil {
		return fmt.Errorf("alter configs of topic %q: %w", topic, k.Explain(err))
	}
	r, err := rs.On(topic, nil)
	if err != nil {
		return fmt.Errorf("alter configs of topic %q: the broker's answer did not mention the topic", topic)
	}
	if r.Err != nil {
		return fmt.Errorf("alter configs of topic %q: %w%s", topic, r.Err, BrokerSays(r.ErrMessage))
	}
	return nil
}

// DeleteRecords deletes the records of one partition before offset before (-1:
// the high watermark) and returns its new low watermark.
func (k *Client) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error) {
	var offs kadm.Offsets
	offs.AddOffset(topic, partition, before, -1)
	rs, err := k.admin.DeleteRecords(ctx, offs)
	if err != nil {
		return 0, fmt.Errorf("delete records of %s/%d: %w", topic, partition, k.Explain(err))
	}
	r, ok := rs.Lookup(topic, partition)
	switch {
	case !ok:
		return 0, fmt.Errorf("delete records of %s/%d: the broker's answer did not mention the partition", topic, partition)
	case r.Err != nil:
		return 0, fmt.Errorf("delete records of %s/%d before %d: %w", topic, partition, before, r.Err)
	}
	return r.LowWatermark, nil
}

// BrokerName names broker id (AllBrokers: every broker) in messages.
func BrokerName(id int32) string {
	if id == AllBrokers {
		return "every broker"
	}
	return "broker " + strconv.Itoa(int(id))
}

// AlterBrokerConfigs changes the dynamic configs of broker id, or of every
// broker for AllBrokers.
func (k *Client) AlterBrokerConfigs(ctx context.Context, id int32, ch ConfigChanges) error {
	var brokers []int32
	if id != AllBrokers {
		brokers = []int32{id}
	}
	what := BrokerName(id)
	rs, err := k.admin.AlterBrokerConfigs(ctx, ch.alterations(), brokers...)
	if err != nil {
		return fmt.Errorf("alter configs of %s: %w", what, k.Explain(err))
	}
	if len(rs) != 1 {
		return fmt.Errorf("alter configs of %s: the broker answered for %d resources", what, len(rs))
	}
	if r := rs[0]; r.Err != nil {
		return fmt.Errorf("alter configs of %s: %w%s", what, r.Err, BrokerSays(r.ErrMessage))
	}
	return nil
}

// DescribeBrokerConfigs returns every config of broker id (AllBrokers: the broker
// the client reaches first).
func (k *Client) DescribeBrokerConfigs(ctx context.Context, id int32) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	name := ""
	if id != AllBrokers {
		name = strconv.Itoa(int(id))
	}
	return k.describeConfigs(ctx, kmsg.ConfigResourceTypeBroker, name, "broker configs")
}

// describeConfigs returns every config of one resource (DescribeConfigs); what
// names it in errors.
func (k *Client) describeConfigs(ctx context.Context, typ kmsg.ConfigResourceType, name, what string) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: typ, ResourceName: name}}
	resp, err := req.RequestWith(ctx, k.kafka)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", what, k.Explain(err))
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("describe %s: the broker answered for %d resources", what, len(resp.Resources))
	}
	r := resp.Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return nil, fmt.Errorf("describe %s: %w%s", what, err, BrokerSays(msg))
	}
	return r.Configs, nil
}

// WriteBrokerConfigs prints a broker's configs for people, sorted by name:
//
//	CONFIG                     VALUE  SOURCE   DYNAMIC
//	auto.create.topics.enable  false  cluster  yes
func WriteBrokerConfigs(w io.Writer, configs []kmsg.DescribeConfigsResponseResourceConfig) error {
	sort.Slice(configs, func(i, j int) bool { return configs[i].Name < configs[j].Name })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONFIG\tVALUE\tSOURCE\tDYNAMIC")
	for _, cf := range configs {
		v := "-"
		switch {
		case cf.IsSensitive:
			v = "(sensitive)"
		case cf.Value != nil && *cf.Value != "":
			v = *cf.Value
		}
		dynamic := "yes"
		if cf.ReadOnly {
			dynamic = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cf.Name, v, ConfigSource(cf.Source), dynamic)
	}
	return tw.Flush()
}

// ConfigSource names where a config value comes from.
func ConfigSource(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "broker"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "cluster"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "broker config file"
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	case kmsg.ConfigSourceGroupConfig:
		return "group"
	case kmsg.ConfigSourceUnknown:
		return "-"
	default:
		return strings.ToLower(s.String())
	}
}

// BrokerSays formats a broker's optional error message for appending to an error.
func BrokerSays(msg string) string {
	if msg == "" {
		return ""
	}
	return " (broker says: " + msg + ")"
}
