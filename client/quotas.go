package client

// Client quotas, as `skiff quota` administers them through the admin API
// (AlterClientQuotas, DescribeClientQuotas): byte rates and request
// percentages of users, client ids and their defaults (docs/quotas.md).

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
)

// The quota keys skiff quota sets, as Kafka names them.
const (
	ProducerByteRate  = "producer_byte_rate"
	ConsumerByteRate  = "consumer_byte_rate"
	RequestPercentage = "request_percentage"
	// ControllerMutationRate is partitions created or deleted per second (KIP-599).
	ControllerMutationRate = "controller_mutation_rate"
	// ConnectionCreationRate is connections accepted per second from an ip
	// (KIP-612), the only quota of an ip entity.
	ConnectionCreationRate = "connection_creation_rate"
)

// QuotaKeys are every quota key a client entity may have; delete removes them.
var QuotaKeys = []string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}

// keys are the quota keys e may have.
func (e QuotaEntity) keys() []string {
	if e.IP != "" || e.DefaultIP {
		return []string{ConnectionCreationRate}
	}
	return QuotaKeys
}

// QuotaEntity names what a quota is set for: a user, a client id, or both;
// each part either named or the default (every user, or client id, without
// a quota of its own). Or an ip address, or the default ip, alone.
type QuotaEntity struct {
	User, ClientID               string
	DefaultUser, DefaultClientID bool
	IP                           string
	DefaultIP                    bool
}

// Validate reports an entity that names nothing, or a part twice.
func (e QuotaEntity) Validate() error {
	switch {
	case e.User != "" && e.DefaultUser:
		return errors.New("give a user or the default user, not both")
	case e.ClientID != "" && e.DefaultClientID:
		return errors.New("give a client id or the default client id, not both")
	case e.IP != "" && e.DefaultIP:
		return errors.New("give an ip or the default ip, not both")
	case (e.IP != "" || e.DefaultIP) && (e.User != "" || e.ClientID != "" || e.DefaultUser || e.DefaultClientID):
		return errors.New("an ip quota is for the ip alone: no user or client id with --ip or --ip-default")
	case e.User == "" && e.ClientID == "" && !e.DefaultUser && !e.DefaultClientID && e.IP == "" && !e.DefaultIP:
		return errors.New("name what the quota is for: --client-id ID, --quota-user NAME, --default, --default-user, --ip ADDR or --ip-default")
	}
	return nil
}

func (e QuotaEntity) kadm() kadm.ClientQuotaEntity {
	var out kadm.ClientQuotaEntity
	part := func(typ, name string, dflt bool) {
		switch {
		case dflt:
			out = append(out, kadm.ClientQuotaEntityComponent{Type: typ})
		case name != "":
			n := name
			out = append(out, kadm.ClientQuotaEntityComponent{Type: typ, Name: &n})
		}
	}
	part("user", e.User, e.DefaultUser)
	part("client-id", e.ClientID, e.DefaultClientID)
	part("ip", e.IP, e.DefaultIP)
	return out
}

// String is the entity as skiff quota list prints it: user=alice,client-id=<default>.
func (e QuotaEntity) String() string { return entityString(e.kadm()) }

func entityString(e kadm.ClientQuotaEntity) string {
	var parts []string
	for _, c := range e {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, ",")
}

// alterQuotas sends one entity's quota changes and words its failure.
func (k *Client) alterQuotas(ctx context.Context, what string, e QuotaEntity, ops []kadm.AlterClientQuotaOp) error {
	res, err := k.admin.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e.kadm(), Ops: ops}})
	if err != nil {
		return fmt.Errorf("%s quotas of %s: %w", what, e, k.Explain(err))
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("%s quotas of %s: %w%s", what, e, r.Err, BrokerSays(r.ErrMessage))
		}
	}
	return nil
}

// SetQuotas sets the quotas of e to the values of set (other quotas of e stay).
func (k *Client) SetQuotas(ctx context.Context, e QuotaEntity, set map[string]float64) error {
	if len(set) == 0 {
		return errors.New("set quotas: no quota given")
	}
	var ops []kadm.AlterClientQuotaOp
	for _, key := range sortedKeys(set) {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: key, Value: set[key]})
	}
	return k.alterQuotas(ctx, "set", e, ops)
}

// DeleteQuotas removes the quotas of keys from e (every quota of e when keys
// is empty).
func (k *Client) DeleteQuotas(ctx context.Context, e QuotaEntity, keys []string) error {
	if len(keys) == 0 {
		keys = e.keys()
	}
	var ops []kadm.AlterClientQuotaOp
	for _, key := range keys {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: key, Remove: true})
	}
	return k.alterQuotas(ctx, "delete", e, ops)
}

// ListQuotas writes a table of every entity with a quota, and its quotas.
func (k *Client) ListQuotas(ctx context.Context, w io.Writer) error {
	quotas, err := k.admin.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		return fmt.Errorf("list quotas: %w", k.Explain(err))
	}
	type row struct{ entity, values string }
	var rows []row
	for _, q := range quotas {
		var vals []string
		for _, v := range q.Values {
			vals = append(vals, v.Key+"="+strconv.FormatFloat(v.Value, 'f', -1, 64))
		}
		sort.Strings(vals)
		rows = append(rows, row{entityString(q.Entity), strings.Join(vals, ", ")})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].entity < rows[j].entity })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTITY\tQUOTAS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r.entity, r.values)
	}
	return tw.Flush()
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
