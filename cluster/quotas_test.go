package cluster

import (
	"maps"
	"strings"
	"testing"

	"skiff/quota"
)

// TestClientQuotas: quotas written by AlterClientQuotas reach every cache,
// are merged with the entity's others, removed one by one (the key goes with
// the last), and a cache started later lists them.
func TestClientQuotas(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	cache := startCache(t, m.Client())
	other := startCache(t, newClient(t, m))

	app := quota.Entity{ClientID: quota.Named("app/1")}
	alice := quota.Entity{User: quota.Named("alice"), ClientID: quota.Default}
	dflt := quota.Entity{User: quota.Default}
	if _, err := s.AlterClientQuotas(ctx, app, quota.Values{quota.ProducerByteRate: 1 << 20}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AlterClientQuotas(ctx, alice, quota.Values{quota.ConsumerByteRate: 2048, quota.RequestPercentage: 50}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AlterClientQuotas(ctx, dflt, quota.Values{quota.ControllerMutationRate: 1.5}, nil); err != nil {
		t.Fatal(err)
	}
	rev, err := s.AlterClientQuotas(ctx, app, quota.Values{quota.ConsumerByteRate: 4096}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := quota.Set{
		app:   {quota.ProducerByteRate: 1 << 20, quota.ConsumerByteRate: 4096},
		alice: {quota.ConsumerByteRate: 2048, quota.RequestPercentage: 50},
		dflt:  {quota.ControllerMutationRate: 1.5},
	}
	for _, c := range []*Cache{cache, other} {
		if err := c.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
		if got := c.Snapshot().Quotas(); !maps.EqualFunc(got, want, maps.Equal) {
			t.Fatalf("cache has %v\nwant %v", got, want)
		}
	}
	if r, ok := cache.Snapshot().Quotas().Resolve(quota.ConsumerByteRate, "alice", "app/1"); !ok || r.Limit != 2048 {
		t.Fatalf("alice with app/1 resolves to %+v %v, want alice's default-client quota 2048", r, ok)
	}

	// Removing both of app's quotas deletes its key.
	rev, err = s.AlterClientQuotas(ctx, app, nil, []string{quota.ProducerByteRate, quota.ConsumerByteRate})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Client().Get(ctx, quotaKey(app))
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("app's key after its last quota was removed: %v %v", resp.Kvs, err)
	}
	delete(want, app)
	late := startCache(t, m.Client())
	for _, c := range []*Cache{cache, late} {
		if err := c.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
		if got := c.Snapshot().Quotas(); !maps.EqualFunc(got, want, maps.Equal) {
			t.Fatalf("cache has %v\nwant %v", got, want)
		}
	}

	// Invalid values and entities are refused before anything is written.
	if _, err := s.AlterClientQuotas(ctx, app, quota.Values{quota.ProducerByteRate: 0.5}, nil); err == nil {
		t.Fatal("a fractional producer_byte_rate was written")
	}
	if _, err := s.AlterClientQuotas(ctx, quota.Entity{}, quota.Values{quota.ProducerByteRate: 1}, nil); err == nil {
		t.Fatal("a quota of the empty entity was written")
	}
}

// TestQuotaKeys: every entity has one key that parses back to it, names with
// '/' and '%' included; keys quotaKey never writes are not quota keys.
func TestQuotaKeys(t *testing.T) {
	names := []quota.Name{{}, quota.Default, quota.Named("a"), quota.Named("x/y%z"), quota.Named("<default>")}
	seen := map[string]quota.Entity{}
	var entities []quota.Entity
	for _, u := range names {
		for _, c := range names {
			entities = append(entities, quota.Entity{User: u, ClientID: c})
		}
	}
	entities = append(entities, quota.Entity{IP: quota.Default}, quota.Entity{IP: quota.Named("127.0.0.1")}, quota.Entity{IP: quota.Named("::1")})
	for _, e := range entities {
		if e.Valid() != "" {
			continue
		}
		key := quotaKey(e)
		if prev, dup := seen[key]; dup {
			t.Fatalf("%s and %s share key %s", prev, e, key)
		}
		seen[key] = e
		got, ok := parseQuotaKey(key)
		if !ok || got != e {
			t.Fatalf("key %s of %s parses to %s %v", key, e, got, ok)
		}
		if kind, _, _ := parseKey(key); kind != keyIsQuota {
			t.Fatalf("key %s is kind %v", key, kind)
		}
	}
	for _, bad := range []string{"", "user", "user/", "client-id/a/user/b", "user/a/user/b", "user/x%2fy", "ip/1.2.3.4/user/a", "user/a/ip/1.2.3.4", "user/a/client-id"} {
		if _, ok := parseQuotaKey(prefixQuotas + bad); ok {
			t.Errorf("%q parsed as a quota key", bad)
		}
	}
	if !strings.HasPrefix(quotaKey(quota.Entity{User: quota.Default}), prefixQuotas) {
		t.Fatal("quota key outside the prefix")
	}
}
