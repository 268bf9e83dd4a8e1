package kafkaapi_test

// Conformance of the client quota keys (48, 49) at each version.

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	conformanceTests[48] = conformDescribeClientQuotas
	conformanceTests[49] = conformAlterClientQuotas
}

func strp(s string) *string { return &s }

// quotaPart is one part of an entity: a name, or nil for the default.
type quotaPart struct {
	typ  string
	name *string
}

// alterQuotas sends one AlterClientQuotas entry at version v and returns its
// code.
func alterQuotas(t *testing.T, c *kconn, v int16, validateOnly bool, entity []quotaPart, ops ...kmsg.AlterClientQuotasRequestEntryOp) int16 {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.SetVersion(v)
	req.ValidateOnly = validateOnly
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, p := range entity {
		ee := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ee.Type, ee.Name = p.typ, p.name
		e.Entity = append(e.Entity, ee)
	}
	e.Ops = ops
	req.Entries = append(req.Entries, e)
	resp := c.do(req).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != 1 {
		t.Fatalf("%d entries in the answer, want 1", len(resp.Entries))
	}
	r := resp.Entries[0]
	if (r.ErrorCode != 0) != (r.ErrorMessage != nil) {
		t.Errorf("error %s with message %v", errName(r.ErrorCode), r.ErrorMessage)
	}
	if len(r.Entity) != len(entity) {
		t.Errorf("answer names entity %+v, want the request's %+v", r.Entity, entity)
	}
	return r.ErrorCode
}

func quotaOp(key string, value float64) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = key, value
	return op
}

func quotaRemove(key string) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Remove = key, true
	return op
}

// describeQuotas sends DescribeClientQuotas at version v and returns its code
// and the quotas of each entity, keyed "user=U,client-id=C" (<default> for a
// default).
func describeQuotas(t *testing.T, c *kconn, v int16, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) (int16, map[string]map[string]float64) {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.SetVersion(v)
	req.Components, req.Strict = comps, strict
	resp := c.do(req).(*kmsg.DescribeClientQuotasResponse)
	if (resp.ErrorCode != 0) != (resp.ErrorMessage != nil) {
		t.Errorf("error %s with message %v", errName(resp.ErrorCode), resp.ErrorMessage)
	}
	out := map[string]map[string]float64{}
	for _, e := range resp.Entries {
		name := ""
		for _, p := range e.Entity {
			n := "<default>"
			if p.Name != nil {
				n = *p.Name
			}
			if name != "" {
				name += ","
			}
			name += p.Type + "=" + n
		}
		vals := map[string]float64{}
		for _, kv := range e.Values {
			vals[kv.Key] = kv.Value
		}
		out[name] = vals
	}
	return resp.ErrorCode, out
}

func quotaComponent(typ string, match kmsg.QuotasMatchType, name *string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = typ, match, name
	return c
}

// conformAlterClientQuotas: quotas set, merged and removed per entity; Kafka's
// INVALID_REQUEST for bad entities, keys and values; validate_only writes
// nothing. Entities are of users of this test only, so no other test's
// client is throttled.
func conformAlterClientQuotas(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			user := fmt.Sprintf("conform-49-v%d", v)
			alice := []quotaPart{{"user", &user}, {"client-id", nil}}
			exact := quotaComponent("user", kmsg.QuotasMatchTypeExact, &user)
			wantCode(t, "validate only", alterQuotas(t, c, v, true, alice, quotaOp("producer_byte_rate", 1024)), 0)
			if _, got := describeQuotas(t, c, v, false, exact); len(got) != 0 {
				t.Fatalf("validate_only wrote %v", got)
			}
			wantCode(t, "set", alterQuotas(t, c, v, false, alice, quotaOp("producer_byte_rate", 1024), quotaOp("request_percentage", 12.5)), 0)
			wantCode(t, "merge", alterQuotas(t, c, v, false, alice, quotaOp("consumer_byte_rate", 2048), quotaRemove("request_percentage")), 0)
			_, got := describeQuotas(t, c, v, false, exact)
			want := map[string]float64{"producer_byte_rate": 1024, "consumer_byte_rate": 2048}
			if e := got["user="+user+",client-id=<default>"]; len(got) != 1 || len(e) != 2 || e["producer_byte_rate"] != 1024 || e["consumer_byte_rate"] != 2048 {
				t.Fatalf("described %v, want %v for %s with the default client id", got, want, user)
			}
			for _, bad := range []struct {
				what   string
				entity []quotaPart
				ops    []kmsg.AlterClientQuotasRequestEntryOp
			}{
				{"empty entity", nil, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("producer_byte_rate", 1)}},
				{"unknown type", []quotaPart{{"group", strp("g")}}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("producer_byte_rate", 1)}},
				{"type twice", []quotaPart{{"user", &user}, {"user", nil}}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("producer_byte_rate", 1)}},
				{"empty name", []quotaPart{{"client-id", strp("")}}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("producer_byte_rate", 1)}},
				{"unknown key", alice, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("bytes_per_fortnight", 1)}},
				{"zero", alice, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("producer_byte_rate", 0)}},
				{"fraction", alice, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("consumer_byte_rate", 1.5)}},
				{"key twice", alice, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("producer_byte_rate", 1), quotaRemove("producer_byte_rate")}},
				{"ip with a client quota", []quotaPart{{"ip", strp("127.0.0.1")}}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("producer_byte_rate", 1)}},
				{"ip with a user", []quotaPart{{"ip", nil}, {"user", &user}}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("connection_creation_rate", 1)}},
				{"not an ip", []quotaPart{{"ip", strp("not-an-ip")}}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("connection_creation_rate", 1)}},
				{"connection rate of a user", alice, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("connection_creation_rate", 1)}},
				{"fractional connection rate", []quotaPart{{"ip", nil}}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("connection_creation_rate", 1.5)}},
			} {
				wantCode(t, bad.what, alterQuotas(t, c, v, false, bad.entity, bad.ops...), kerr.InvalidRequest.Code)
			}
			if _, after := describeQuotas(t, c, v, false, exact); len(after) != 1 || after["user="+user+",client-id=<default>"]["producer_byte_rate"] != 1024 {
				t.Fatalf("refused changes changed the quotas: %v", after)
			}
			wantCode(t, "remove all", alterQuotas(t, c, v, false, alice, quotaRemove("producer_byte_rate"), quotaRemove("consumer_byte_rate")), 0)
			if _, after := describeQuotas(t, c, v, false, exact); len(after) != 0 {
				t.Fatalf("quotas left after removing all: %v", after)
			}
		})
	}
}

// conformDescribeClientQuotas: each match type, strict, and Kafka's errors for
// bad filters.
func conformDescribeClientQuotas(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			user := fmt.Sprintf("conform-48-v%d", v)
			client := user + "-client"
			only := []quotaPart{{"user", &user}}
			pair := []quotaPart{{"user", &user}, {"client-id", &client}}
			pairDefault := []quotaPart{{"user", &user}, {"client-id", nil}}
			for i, e := range [][]quotaPart{only, pair, pairDefault} {
				wantCode(t, "set", alterQuotas(t, c, v, false, e, quotaOp("producer_byte_rate", float64(1000*(i+1)))), 0)
			}
			t.Cleanup(func() {
				for _, e := range [][]quotaPart{only, pair, pairDefault} {
					alterQuotas(t, c, v, false, e, quotaRemove("producer_byte_rate"))
				}
			})
			u := quotaComponent("user", kmsg.QuotasMatchTypeExact, &user)
			for _, tc := range []struct {
				what   string
				strict bool
				comps  []kmsg.DescribeClientQuotasRequestComponent
				want   []string
			}{
				{"user", false, []kmsg.DescribeClientQuotasRequestComponent{u}, []string{"user=" + user, "user=" + user + ",client-id=" + client, "user=" + user + ",client-id=<default>"}},
				{"user strict", true, []kmsg.DescribeClientQuotasRequestComponent{u}, []string{"user=" + user}},
				{"default client", false, []kmsg.DescribeClientQuotasRequestComponent{u, quotaComponent("client-id", kmsg.QuotasMatchTypeDefault, nil)}, []string{"user=" + user + ",client-id=<default>"}},
				{"any client", true, []kmsg.DescribeClientQuotasRequestComponent{u, quotaComponent("client-id", kmsg.QuotasMatchTypeAny, nil)}, []string{"user=" + user + ",client-id=" + client, "user=" + user + ",client-id=<default>"}},
				{"exact client", false, []kmsg.DescribeClientQuotasRequestComponent{quotaComponent("client-id", kmsg.QuotasMatchTypeExact, &client)}, []string{"user=" + user + ",client-id=" + client}},
			} {
				code, got := describeQuotas(t, c, v, tc.strict, tc.comps...)
				wantCode(t, tc.what, code, 0)
				if len(got) != len(tc.want) {
					t.Fatalf("%s: described %v, want %v", tc.what, got, tc.want)
				}
				for _, name := range tc.want {
					if _, ok := got[name]; !ok {
						t.Fatalf("%s: described %v, want %v", tc.what, got, tc.want)
					}
				}
			}
			for _, bad := range []struct {
				what  string
				comps []kmsg.DescribeClientQuotasRequestComponent
				code  int16
			}{
				{"type twice", []kmsg.DescribeClientQuotasRequestComponent{u, quotaComponent("user", kmsg.QuotasMatchTypeAny, nil)}, kerr.InvalidRequest.Code},
				{"exact without match", []kmsg.DescribeClientQuotasRequestComponent{quotaComponent("user", kmsg.QuotasMatchTypeExact, nil)}, kerr.InvalidRequest.Code},
				{"default with match", []kmsg.DescribeClientQuotasRequestComponent{quotaComponent("user", kmsg.QuotasMatchTypeDefault, &user)}, kerr.InvalidRequest.Code},
				{"empty type", []kmsg.DescribeClientQuotasRequestComponent{quotaComponent("", kmsg.QuotasMatchTypeAny, nil)}, kerr.InvalidRequest.Code},
				{"unknown type", []kmsg.DescribeClientQuotasRequestComponent{quotaComponent("group", kmsg.QuotasMatchTypeAny, nil)}, kerr.UnsupportedVersion.Code},
				{"ip with user", []kmsg.DescribeClientQuotasRequestComponent{u, quotaComponent("ip", kmsg.QuotasMatchTypeAny, nil)}, kerr.InvalidRequest.Code},
				{"unknown match type", []kmsg.DescribeClientQuotasRequestComponent{quotaComponent("user", 7, nil)}, kerr.InvalidRequest.Code},
			} {
				code, got := describeQuotas(t, c, v, false, bad.comps...)
				wantCode(t, bad.what, code, bad.code)
				if len(got) != 0 {
					t.Errorf("%s: entries %v with an error", bad.what, got)
				}
			}
		})
	}
}
