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

	count := func(ip string, d time.Duration) (answered, closed int) {
		for end := time.Now().Add(d); time.Now().Before(end); {
			kc := dialFrom(t, ip, n.KafkaAddr())
			if kc.served() {
				answered++
			} else {
				closed++
			}
			kc.nc.Close()
		}
		return answered, closed
	}
	answered, closed := count(limited, run)
	want := rate*11 + rate*int(run/time.Second)
	t.Logf("%s with %d/s: %d connections answered in %v (%.1f/s; the burst is %d), %d closed", limited, rate, answered, run, float64(answered)/run.Seconds(), rate*11, closed)
	if answered < want-rate || answered > want+1 || closed == 0 {
		t.Errorf("%s: %d connections answered, %d closed in %v; want the burst and %d/s: about %d", limited, answered, closed, run, rate, want)
	}
	freeAnswered, freeClosed := count(free, time.Second)
	t.Logf("%s without a quota: %d connections answered in 1 s, %d closed", free, freeAnswered, freeClosed)
	if freeClosed != 0 || freeAnswered <= want {
		t.Errorf("%s without a quota: %d answered, %d closed in 1 s", free, freeAnswered, freeClosed)
	}
}
