package client

// A group's configs (the GROUP config resource of KIP-848 and KIP-932:
// share.*, consumer.*, errors.deadletterqueue.topic.name), as `skiff group
// alter-config` and `skiff group describe-config` change and show them. kadm has
// no helper for this resource, so the requests are sent as kmsg messages.

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterGroupConfigs changes the configs of group, all at once or none
// (IncrementalAlterConfigs on the GROUP resource). A value the broker refuses is
// an error carrying Kafka's INVALID_CONFIG and the broker's message.
func (k *Client) AlterGroupConfigs(ctx context.Context, group string, ch ConfigChanges) error {
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, a := range ch.alterations() {
		cf := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cf.Name, cf.Value, cf.Op = a.Name, a.Value, kmsg.IncrementalAlterConfigOp(a.Op)
		res.Configs = append(res.Configs, cf)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, k.kafka)
	if err != nil {
		return fmt.Errorf("alter configs of group %q: %w", group, k.Explain(err))
	}
	if len(resp.Resources) != 1 {
		return fmt.Errorf("alter configs of group %q: the broker answered for %d resources", group, len(resp.Resources))
	}
	r := resp.Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return fmt.Errorf("alter configs of group %q: %w%s", group, err, BrokerSays(msg))
	}
	return nil
}

// DescribeGroupConfigs returns every config of group: its overrides and the
// broker's defaults of the others.
func (k *Client) DescribeGroupConfigs(ctx context.Context, group string) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	return k.describeConfigs(ctx, kmsg.ConfigResourceTypeGroupConfig, group, fmt.Sprintf("configs of group %q", group))
}

// WriteGroupConfigs prints a group's configs for people, sorted by name:
//
//	CONFIG                      VALUE  SOURCE
//	share.delivery.count.limit  3      group
func WriteGroupConfigs(w io.Writer, configs []kmsg.DescribeConfigsResponseResourceConfig) error {
	sort.Slice(configs, func(i, j int) bool { return configs[i].Name < configs[j].Name })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONFIG\tVALUE\tSOURCE")
	for _, cf := range configs {
		v := "-"
		if cf.Value != nil && *cf.Value != "" {
			v = *cf.Value
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cf.Name, v, ConfigSource(cf.Source))
	}
	return tw.Flush()
}
