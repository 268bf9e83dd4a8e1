package quota

import (
	"sync"
	"time"
)

// idleExpiry is how long a rate nobody records into is kept (Kafka's
// inactive sensor expiry).
const idleExpiry = time.Hour

// Manager measures the clients of one node against the quotas and says how
// long a client over its quota is throttled. It is safe for concurrent use.
type Manager struct {
	w      Window
	quotas func() Set
	mu     sync.Mutex
	rates  map[rateKey]*sharedRate // guarded by mu
	swept  time.Time               // guarded by mu
}

type rateKey struct {
	key  string
	tags Tags
	ip   string // connection_creation_rate's
}

// sharedRate is the rate and the token bucket of the clients that resolve
// to one Tags for one key.
type sharedRate struct {
	mu   sync.Mutex
	r    *rate     // guarded by mu
	b    bucket    // guarded by mu
	used time.Time // guarded by mu
}

// NewManager returns a Manager measuring over w (zero fields: Kafka's
// defaults) against the quotas that quotas returns at each measure (the
// metadata cache's: a change applies at once; rates measured so far are
// kept).
func NewManager(w Window, quotas func() Set) *Manager {
	return &Manager{w: w.withDefaults(), quotas: quotas, rates: map[rateKey]*sharedRate{}}
}

// Window is what the manager measures over.
func (m *Manager) Window() Window { return m.w }

// Active reports whether any quota is set, so that callers can skip
// measuring what no quota bounds.
func (m *Manager) Active() bool { return len(m.quotas()) > 0 }

func (m *Manager) shared(k rateKey, now time.Time) *sharedRate {
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.swept) > time.Minute {
		m.swept = now
		for key, sr := range m.rates {
			sr.mu.Lock()
			idle := now.Sub(sr.used) > idleExpiry
			sr.mu.Unlock()
			if idle {
				delete(m.rates, key)
			}
		}
	}
	sr := m.rates[k]
	if sr == nil {
		sr = &sharedRate{r: newRate(m.w), b: bucket{w: m.w}, used: now}
		m.rates[k] = sr
	}
	return sr
}

// Usage is what Record measured: the quota that applies and the client's rate.
type Usage struct {
	Resolved
	// Rate is the measured rate after the value was recorded, per second.
	Rate float64
	// Throttle is how long the client is throttled (0 within its quota).
	Throttle time.Duration
}

// Record adds v to the rate of key of the client of user and clientID, if a
// quota of key applies to it, and returns its usage; ok is false when no quota
// applies (nothing is recorded). Its Rate is Kafka's sampled rate; its
// throttle comes from Kafka's token bucket over the same window (KIP-599,
// bucket): the time until the client is back within its quota.
// request_percentage throttles for at most one window, as Kafka does.
func (m *Manager) Record(key, user, clientID string, v float64, now time.Time) (u Usage, ok bool) {
	res, ok := m.quotas().Resolve(key, user, clientID)
	if !ok {
		return u, false
	}
	sr := m.shared(rateKey{key: key, tags: res.Tags}, now)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.used = now
	sr.r.record(v, now)
	u = Usage{Resolved: res, Rate: sr.r.measure(now), Throttle: sr.b.take(res.Limit, v, now).Round(time.Millisecond)}
	if key == RequestPercentage {
		u.Throttle = min(u.Throttle, m.w.Size)
	}
	return u, true
}

// Owed is how long the client of user and clientID is still throttled for
// key at now (0 when within its quota, or when no quota of key applies),
// without recording anything: a fetch that would find the client in debt
// returns no data instead of adding to it.
func (m *Manager) Owed(key, user, clientID string, now time.Time) time.Duration {
	res, ok := m.quotas().Resolve(key, user, clientID)
	if !ok {
		return 0
	}
	sr := m.shared(rateKey{key: key, tags: res.Tags}, now)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return sr.b.take(res.Limit, 0, now).Round(time.Millisecond)
}

// MaxInWindow is what Kafka caps a consumer's fetch size with: its quota
// times Span. ok is false when no quota applies.
func (m *Manager) MaxInWindow(key, user, clientID string) (float64, bool) {
	res, ok := m.quotas().Resolve(key, user, clientID)
	if !ok {
		return 0, false
	}
	return res.Limit * m.w.Span().Seconds(), true
}

// AdmitConnection records a new connection from ip against its
// connection_creation_rate (KIP-612) and returns 0 to accept it, or how long
// the ip is still throttled: the connection is then refused and not counted,
// as Kafka unrecords it. As for a strict mutation quota, a connection that finds
// the ip's bucket not in debt is accepted. Each ip has its own rate, also under
// the default ip's quota.
func (m *Manager) AdmitConnection(ip string, now time.Time) time.Duration {
	limit, ok := m.quotas().ResolveIP(ip)
	if !ok {
		return 0
	}
	sr := m.shared(rateKey{key: ConnectionCreationRate, ip: ip}, now)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.used = now
	if th := sr.b.take(limit, 0, now); th > 0 {
		return th.Round(time.Millisecond)
	}
	sr.r.record(1, now)
	sr.b.take(limit, 1, now)
	return 0
}
