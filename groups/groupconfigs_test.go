package groups

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// groupConfigStore is a test's GROUP config resource.
type groupConfigStore struct {
	mu  sync.Mutex
	set map[string]map[string]string
}

func (s *groupConfigStore) get(group string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set[group]
}

func (s *groupConfigStore) put(group string, c map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set[group] = c
}

// A group's consumer.* configs are validated against the broker's bounds as
// Kafka's GroupConfig does, and described with the broker's values as defaults.
func TestConsumerGroupConfigsValidate(t *testing.T) {
	e := newConsumerEnv(t, func(c *Config) {
		c.ConsumerSessionTimeout, c.ConsumerMinSessionTimeout = 45*time.Second, 10*time.Second
	})
	for _, tc := range []struct {
		set  map[string]string
		want string // "" valid, else part of the error
	}{
		{map[string]string{ConfigConsumerSessionTimeout: "20000"}, ""},
		{map[string]string{ConfigConsumerSessionTimeout: "60000", ConfigConsumerHeartbeatInterval: "15000"}, ""},
		{map[string]string{"share.auto.offset.reset": "earliest"}, ""}, // not ours
		{map[string]string{ConfigConsumerSessionTimeout: "9999"}, "must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{map[string]string{ConfigConsumerSessionTimeout: "60001"}, "must be less than or equal to group.consumer.max.session.timeout.ms"},
		{map[string]string{ConfigConsumerHeartbeatInterval: "4999"}, "must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{map[string]string{ConfigConsumerHeartbeatInterval: "15001"}, "must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{map[string]string{ConfigConsumerSessionTimeout: "12000", ConfigConsumerHeartbeatInterval: "12000"}, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{map[string]string{ConfigConsumerSessionTimeout: "soon"}, "Invalid value soon"},
		{map[string]string{ConfigConsumerHeartbeatInterval: "0"}, "Value must be at least 1"},
	} {
		err := e.c.ValidateGroupConfigs(tc.set)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Fatalf("validate %v: %v, want %q", tc.set, err, tc.want)
		}
	}
	got := e.c.DescribeGroupConfigs(map[string]string{ConfigConsumerSessionTimeout: "20000"})
	want := []GroupConfigEntry{{ConfigConsumerHeartbeatInterval, "5000", true}, {ConfigConsumerSessionTimeout, "20000", false}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("described %+v, want %+v", got, want)
	}
}

// A group's consumer.session.timeout.ms expires its members at the group's
// timeout, not the broker's, and its consumer.heartbeat.interval.ms is what the
// heartbeat answers carry.
func TestConsumerGroupConfigSessionTimeout(t *testing.T) {
	store := &groupConfigStore{set: map[string]map[string]string{}}
	e := newConsumerEnv(t, func(c *Config) {
		c.ConsumerSessionTimeout, c.ConsumerMinSessionTimeout = 45*time.Second, 10*time.Second
		c.ConsumerMinHeartbeatInterval = time.Second
		c.GroupConfigs = store.get
	})
	m1 := e.cgJoin("g", "m1", "t")
	m2 := e.cgJoin("g", "m2", "t")
	if r := e.cgHeartbeat("g", m2, m2.epoch, nil, m2.owned); r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("heartbeat interval %d before the group's config", r.HeartbeatIntervalMillis)
	}
	store.put("g", map[string]string{ConfigConsumerSessionTimeout: "20000", ConfigConsumerHeartbeatInterval: "2000"})
	if err := e.c.ValidateGroupConfigs(store.get("g")); err != nil {
		t.Fatal(err)
	}
	if r := e.cgHeartbeat("g", m2, m2.epoch, nil, m2.owned); r.HeartbeatIntervalMillis != 2000 {
		t.Fatalf("heartbeat interval %d, want the group's 2000", r.HeartbeatIntervalMillis)
	}
	e.cgBeat("g", m1) // its session now runs on the group's timeout
	e.cgBeat("g", m2)
	e.cgBeat("g", m1)
	e.cgBeat("g", m2)
	noOverlap(t, m1, m2)
	e.clock.Advance(12 * time.Second)
	e.cgBeat("g", m2)
	if len(m2.owned) == 4 {
		t.Fatal("m1 expired after 12 s of a 20 s session")
	}
	e.clock.Advance(12 * time.Second) // m1 silent for 24 s: past 20 s, short of the broker's 45 s
	e.cgBeat("g", m2)
	if len(m2.owned) != 4 {
		t.Fatalf("m2 owns %d after m1's 20 s session ended", len(m2.owned))
	}
	wantCode(t, "m1 after its session", e.cgHeartbeat("g", &cgm{id: "m1"}, m1.epoch, nil, m1.owned).ErrorCode, kerr.UnknownMemberID)
}
