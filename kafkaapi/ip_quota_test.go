package kafkaapi_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/quota"
)

// TestConnectionCreationRate: an ip with a connection_creation_rate (KIP-612) of
// 5/s that connects flat out gets its burst (11 s of quota) and then 5 a second;
// the connections over it are closed unanswered. Another address beside it,
// without a quota, has every connection answered. Real connections from
// 127.0.0.5 and 127.0.0.6.
func TestConnectionCreationRate(t *testing.T) {
	const (
		limited, free = "127.0.0.5", "127.0.0.6"
		rate          = 5
		run           = 4 * time.Second
	)
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	entity := []quotaPart{{quota.TypeIP, strp(limited)}}
	wantCode(t, "set ip quota", alterQuotas(t, c, 1, false, entity, quotaOp(quota.ConnectionCreationRate, rate)), 0)
	t.Cleanup(func() { alterQuotas(t, c, 1, false, entity, quotaRemove(quota.ConnectionCreationRate)) })
	comp := kmsg.NewDescribeClientQuotasRequestComponent()
	comp.EntityType, comp.MatchType, comp.Match = quota.TypeIP, 0, strp(limited)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, got := describeQuotas(t, c, 1, true, comp); got["ip="+limited][quota.ConnectionCreationRate] == rate {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ip quota is not applied after 10 s")
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}

	// count dials from ip for d and returns the wall time it took: the last
	// connection may start just before d ends and be answered after it.
	count := func(ip string, d time.Duration) (answered, closed int, took time.Duration) {
		start := time.Now()
		for end := start.Add(d); time.Now().Before(end); {
			kc := dialFrom(t, ip, n.KafkaAddr())
			if kc.served() {
				answered++
			} else {
				closed++
			}
			kc.nc.Close()
		}
		return answered, closed, time.Since(start)
	}
	answered, closed, took := count(limited, run)
	// The bucket refills for as long as the run took, which on a loaded machine
	// may be more than run. Within a second's worth of quota either way: CI once
	// saw 77 against a bound of want+1 = 76 (not explained; the log had no
	// timings); without the quota the same loop is answered thousands of times.
	want := rate*11 + int(rate*took.Seconds())
	t.Logf("%s with %d/s: %d connections answered in %v (%.1f/s; the burst is %d), %d closed", limited, rate, answered, took, float64(answered)/took.Seconds(), rate*11, closed)
	if answered < rate*11+rate*int(run/time.Second)-rate || answered > want+rate || closed == 0 {
		t.Errorf("%s: %d connections answered, %d closed in %v; want the burst and %d/s: about %d", limited, answered, closed, took, rate, want)
	}
	freeAnswered, freeClosed, _ := count(free, time.Second)
	t.Logf("%s without a quota: %d connections answered in 1 s, %d closed", free, freeAnswered, freeClosed)
	if freeClosed != 0 || freeAnswered <= want {
		t.Errorf("%s without a quota: %d answered, %d closed in 1 s", free, freeAnswered, freeClosed)
	}
}
