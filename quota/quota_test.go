package quota

import (
	"math"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		key string
		v   float64
		ok  bool
	}{
		{ProducerByteRate, 1024, true},
		{ConnectionCreationRate, 10, false}, // not for a client id
		{ProducerByteRate, 1.5, false},
		{ConsumerByteRate, 0, false},
		{RequestPercentage, 12.5, true},
		{ControllerMutationRate, -1, false},
		{"bogus", 1, false},
		{ProducerByteRate, math.Inf(1), false},
		{ProducerByteRate, math.NaN(), false},
	} {
		if err := Validate(Entity{ClientID: Named("c")}, tc.key, tc.v); (err == nil) != tc.ok {
			t.Errorf("Validate(%s, %v) = %v, want ok=%v", tc.key, tc.v, err, tc.ok)
		}
	}
}

// TestResolveOrder sets quotas at every level and removes them from the most
// specific on, checking that each removal uncovers the next in Kafka's order.
func TestResolveOrder(t *testing.T) {
	u, c, none := Named("alice"), Named("app"), Name{}
	levels := []struct {
		e    Entity
		tags Tags
	}{
		{Entity{User: u, ClientID: c}, Tags{"alice", "app"}},
		{Entity{User: u, ClientID: Default}, Tags{"alice", "app"}},
		{Entity{User: u, ClientID: none}, Tags{User: "alice"}},
		{Entity{User: Default, ClientID: c}, Tags{"alice", "app"}},
		{Entity{User: Default, ClientID: Default}, Tags{"alice", "app"}},
		{Entity{User: Default, ClientID: none}, Tags{User: "alice"}},
		{Entity{User: none, ClientID: c}, Tags{ClientID: "app"}},
		{Entity{User: none, ClientID: Default}, Tags{ClientID: "app"}},
	}
	s := Set{}
	for i, l := range levels {
		s[l.e] = Values{ProducerByteRate: float64(i + 1)}
	}
	s[Entity{User: Named("bob"), ClientID: none}] = Values{ProducerByteRate: 99}
	for i, l := range levels {
		r, ok := s.Resolve(ProducerByteRate, "alice", "app")
		if !ok || r.Limit != float64(i+1) || r.Tags != l.tags {
			t.Fatalf("level %d (%s): got %+v %v, want limit %d tags %+v", i, l.e, r, ok, i+1, l.tags)
		}
		if _, ok := s.Resolve(ConsumerByteRate, "alice", "app"); ok {
			t.Fatalf("level %d: a consumer quota resolved from producer quotas", i)
		}
		delete(s, l.e)
	}
	if r, ok := s.Resolve(ProducerByteRate, "alice", "app"); ok {
		t.Fatalf("no quota left for alice, got %+v", r)
	}
}

// TestIPQuotas: an ip entity takes connection_creation_rate only, whole, and
// alone; an ip's own quota comes before the default ip's.
func TestIPQuotas(t *testing.T) {
	ip := Entity{IP: Named("127.0.0.1")}
	for _, tc := range []struct {
		key string
		v   float64
		ok  bool
	}{
		{ConnectionCreationRate, 10, true},
		{ConnectionCreationRate, 1.5, false},
		{ConnectionCreationRate, 1 << 32, false},
		{ProducerByteRate, 10, false},
	} {
		if err := Validate(ip, tc.key, tc.v); (err == nil) != tc.ok {
			t.Errorf("Validate(ip, %s, %v) = %v, want ok=%v", tc.key, tc.v, err, tc.ok)
		}
	}
	if (Entity{IP: Named("not an ip")}).Valid() == "" || (Entity{IP: Default, User: Named("u")}).Valid() == "" {
		t.Error("a bad ip or an ip with a user accepted")
	}
	s := Set{{IP: Default}: {ConnectionCreationRate: 5}, ip: {ConnectionCreationRate: 50}}
	if v, ok := s.ResolveIP("127.0.0.1"); !ok || v != 50 {
		t.Errorf("own ip quota: %v %v", v, ok)
	}
	if v, ok := s.ResolveIP("10.0.0.1"); !ok || v != 5 {
		t.Errorf("default ip quota: %v %v", v, ok)
	}
	if _, ok := s.Resolve(ConnectionCreationRate, "u", "c"); ok {
		t.Error("an ip quota resolved for a user")
	}
}

func TestEntityValid(t *testing.T) {
	if (Entity{}).Valid() == "" || (Entity{User: Named("")}).Valid() == "" {
		t.Fatal("empty entity or empty user accepted")
	}
	if (Entity{User: Default}).Valid() != "" || (Entity{User: Named("a"), ClientID: Default}).Valid() != "" {
		t.Fatal("valid entities refused")
	}
}

// TestBurstAndThrottle checks the burst a client may take at the start,
// Samples×Size of its quota (the token bucket starts full), and the throttle
// of a client over it: the time until the bucket is back at zero.
func TestBurstAndThrottle(t *testing.T) {
	m := NewManager(Window{}, func() Set { return Set{{ClientID: Named("p")}: {ProducerByteRate: 1000}} })
	t0 := time.Unix(1000, 0)
	if most, _ := m.MaxInWindow(ProducerByteRate, "u", "p"); most != 10000 {
		t.Fatalf("MaxInWindow = %v, want 10000 (1000 B/s over 10 s)", most)
	}
	u, ok := m.Record(ProducerByteRate, "u", "p", 11000, t0)
	if !ok || u.Throttle != 0 || u.Rate != 1100 {
		t.Fatalf("burst of 11000 B at the start: %+v %v, want rate 1100 (over 10 s) and no throttle", u, ok)
	}
	// 100 B refilled in 0.1 s: 9900 short, 9.9 s at 1000 B/s.
	u, _ = m.Record(ProducerByteRate, "u", "p", 10000, t0.Add(100*time.Millisecond))
	if u.Throttle != 9900*time.Millisecond {
		t.Fatalf("throttle = %v, want 9.9s", u.Throttle)
	}
	// Another client id has no quota and is not measured.
	if _, ok := m.Record(ProducerByteRate, "u", "other", 1e9, t0); ok {
		t.Fatal("a client without a quota was measured")
	}
	// Once refilled, the client is within its quota again.
	u, _ = m.Record(ProducerByteRate, "u", "p", 1, t0.Add(12*time.Second))
	if u.Throttle != 0 {
		t.Fatalf("after the bucket refilled: %+v", u)
	}
}

// TestRateSteady records a constant rate for a minute and checks the measure.
func TestRateSteady(t *testing.T) {
	r := newRate(Window{})
	t0 := time.Unix(0, 0)
	for ms := 0; ms < 60000; ms += 10 {
		r.record(10, t0.Add(time.Duration(ms)*time.Millisecond)) // 1000/s
	}
	got := r.measure(t0.Add(60 * time.Second))
	if math.Abs(got-1000)/1000 > 0.01 {
		t.Fatalf("steady 1000/s measured as %v", got)
	}
}

func TestRequestPercentageThrottleCapped(t *testing.T) {
	m := NewManager(Window{}, func() Set { return Set{{User: Default}: {RequestPercentage: 1}} })
	u, ok := m.Record(RequestPercentage, "u", "c", 1e6, time.Unix(0, 0))
	if !ok || u.Throttle != time.Second {
		t.Fatalf("request_percentage throttle = %v (%v), want capped at one window", u.Throttle, ok)
	}
}

// TestOwed: a client in debt owes the time until its bucket is back at zero,
// and asking records nothing.
func TestOwed(t *testing.T) {
	m := NewManager(Window{}, func() Set { return Set{{ClientID: Named("c")}: {ConsumerByteRate: 1000}} })
	t0 := time.Unix(0, 0)
	if d := m.Owed(ConsumerByteRate, "u", "c", t0); d != 0 {
		t.Fatalf("a new client owes %v", d)
	}
	m.Record(ConsumerByteRate, "u", "c", 13000, t0) // 2000 over the 11000 burst
	for i := 0; i < 3; i++ {
		if d := m.Owed(ConsumerByteRate, "u", "c", t0.Add(500*time.Millisecond)); d != 1500*time.Millisecond {
			t.Fatalf("owed %v half a second later, want 1.5s", d)
		}
	}
	if d := m.Owed(ConsumerByteRate, "u", "other", t0); d != 0 {
		t.Fatalf("a client without a quota owes %v", d)
	}
}

// TestAdmitConnection: an ip takes its burst (Samples×Size of its rate), then
// one connection per 1/rate; the refused ones do not count; another ip has its
// own rate under the default ip's quota.
func TestAdmitConnection(t *testing.T) {
	m := NewManager(Window{}, func() Set { return Set{{IP: Default}: {ConnectionCreationRate: 2}} })
	t0 := time.Unix(0, 0)
	accepted := 0
	for i := range 1000 { // 100 per second for 10 s
		if m.AdmitConnection("10.0.0.1", t0.Add(time.Duration(i)*10*time.Millisecond)) == 0 {
			accepted++
		}
	}
	if want := 22 + 2*10; accepted < want-1 || accepted > want+1 {
		t.Fatalf("%d connections accepted in 10 s at 2/s, want the burst of 22 and 20 more", accepted)
	}
	if th := m.AdmitConnection("10.0.0.2", t0.Add(10*time.Second)); th != 0 {
		t.Fatalf("another ip throttled %v", th)
	}
	m.AdmitConnection("10.0.0.1", t0.Add(10*time.Second)) // may find the bucket just refilled to 0
	if th := m.AdmitConnection("10.0.0.1", t0.Add(10*time.Second)); th <= 0 || th > 500*time.Millisecond {
		t.Fatalf("throttle %v of an ip over its rate, want at most 1/rate", th)
	}
}

// TestBucketIdleRefillCapped: a bucket idle for longer than it takes to fill
// is full, not fuller: one take after the idle time still costs its value, so
// a take of twice the burst is throttled for one burst's refill time.
func TestBucketIdleRefillCapped(t *testing.T) {
	w := Window{Samples: 11, Size: time.Second}
	b := bucket{w: w}
	now := time.Unix(1000, 0)
	if d := b.take(100, 0, now); d != 0 {
		t.Fatalf("a full bucket throttles %v", d)
	}
	// Idle for an hour: 360,000 tokens of refill against a burst of 1,100.
	d := b.take(100, 2200, now.Add(time.Hour))
	if d != 11*time.Second {
		t.Fatalf("a take of twice the burst after an idle hour throttles %v, want 11s", d)
	}
}
