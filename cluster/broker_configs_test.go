package cluster

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
)

// TestAlterBrokerConfigs: dynamic configs of one broker and of all, written by
// compare-and-swap (concurrent changes all land), served by the cache, and the key
// deleted when the last config goes.
func TestAlterBrokerConfigs(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	c := startCache(t, newClient(t, m))
	set := func(k, v string) func(map[string]string) (map[string]string, error) {
		return func(cur map[string]string) (map[string]string, error) {
			if cur == nil {
				cur = map[string]string{}
			}
			cur[k] = v
			return cur, nil
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				if _, err := s.AlterBrokerConfigs(ctx, ClusterDefault, set(fmt.Sprintf("k%d.%d", w, i), "v")); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	rev, err := s.AlterBrokerConfigs(ctx, 3, set("log.retention.ms", "1000"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	snap := c.Snapshot()
	if got := snap.BrokerConfigs(ClusterDefault); len(got) != 20 {
		t.Fatalf("cluster default holds %d configs, want the 20 written concurrently: %v", len(got), got)
	}
	if got := snap.BrokerConfigs(3); !maps.Equal(got, map[string]string{"log.retention.ms": "1000"}) {
		t.Fatalf("broker 3: %v", got)
	}
	if d := snap.BrokerDefaults(3, map[string]string{"x": "y"}); d.Broker["log.retention.ms"] != "1000" || len(d.Cluster) != 20 || d.Static["x"] != "y" {
		t.Fatalf("BrokerDefaults: %+v", d)
	}
	if snap.BrokerConfigs(4) != nil {
		t.Fatal("broker 4 has configs")
	}

	boom := errors.New("refused")
	if _, err := s.AlterBrokerConfigs(ctx, 3, func(map[string]string) (map[string]string, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("alter's error: %v", err)
	}
	rev, err = s.AlterBrokerConfigs(ctx, 3, func(map[string]string) (map[string]string, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot().BrokerConfigs(3); got != nil {
		t.Fatalf("broker 3 after clearing: %v", got)
	}
	if resp, err := m.Client().Get(ctx, brokerConfigsKey(3)); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the key of broker 3 is left: %v %v", resp, err)
	}
	if _, err := s.AlterBrokerConfigs(ctx, -2, set("a", "b")); !errors.Is(err, ErrInvalidBroker) {
		t.Fatalf("broker -2: %v", err)
	}
}
