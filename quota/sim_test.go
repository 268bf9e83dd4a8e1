package quota

import (
	"math"
	"testing"
	"time"
)

// TestFlatOutClientHeldToQuota simulates a client that sends 50 MB/s in
// requests of a given size and waits out every throttle, as KIP-219 clients
// do: after its first burst, what it gets through from 12 s to 30 s must be
// its quota, whatever its request size. (Kafka's sampled rate alone fails
// this: a flat-out client bursts again each time its oldest sample expires.)
func TestFlatOutClientHeldToQuota(t *testing.T) {
	const limit = 1 << 20
	for _, size := range []float64{1 << 20, 256 << 10, 16 << 10} {
		m := NewManager(Window{}, func() Set { return Set{{ClientID: Named("p")}: {ProducerByteRate: limit}} })
		t0 := time.Unix(1000, 0)
		now := t0
		var steady, first float64
		for now.Sub(t0) < 30*time.Second {
			u, _ := m.Record(ProducerByteRate, "", "p", size, now)
			switch at := now.Sub(t0); {
			case at < time.Second:
				first += size
			case at >= 12*time.Second:
				steady += size
			}
			now = now.Add(time.Duration(size/50e6*float64(time.Second)) + u.Throttle)
		}
		if got := steady / 18 / limit; math.Abs(got-1) > 0.02 {
			t.Errorf("requests of %v B: %.3f of the quota from 12 s to 30 s", size, got)
		}
		if burst := first / limit; burst < 11 || burst > 12 {
			t.Errorf("requests of %v B: first second took %.2f s of quota, want the 11 s burst", size, burst)
		}
	}
}
