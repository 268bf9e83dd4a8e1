package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// failoverSession is the session timeout of both protocols' members in
// BenchmarkMemberDeath: the classic member asks for it, the KIP-848 group has it
// as group.consumer.session.timeout.ms. Both heartbeat every failoverHeartbeat.
const (
	failoverSession   = 3 * time.Second
	failoverHeartbeat = 500 * time.Millisecond
)

// failoverOpts are the options of a BenchmarkMemberDeath member.
func failoverOpts(addr, topic, group, protocol string) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(failoverSession), kgo.HeartbeatInterval(failoverHeartbeat),
		kgo.RebalanceTimeout(10 * time.Second), kgo.FetchMaxWait(200 * time.Millisecond),
	}
	if protocol == "consumer" {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	return opts
}

// TestHelperFailoverMember is not a test: it is the member BenchmarkMemberDeath
// kills, in its own process. Its spec is "addr|topic|group|protocol"; it polls
// until it is killed.
func TestHelperFailoverMember(t *testing.T) {
	spec := os.Getenv("SKIFF_E2E_FAILOVER_MEMBER")
	if spec == "" {
		t.Skip("helper process of BenchmarkMemberDeath")
	}
	f := strings.Split(spec, "|")
	cl, err := kgo.NewClient(failoverOpts(f[0], f[1], f[2], f[3])...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for {
		cl.PollFetches(context.Background())
	}
}

// BenchmarkMemberDeath measures how long a group takes to give a SIGKILLed
// member's partitions to the survivor, from the kill to the survivor's
// assignment callback, under the classic protocol and under KIP-848 with the same
// session timeout (3 s) and heartbeat interval (500 ms). Each op is one death:
// a new victim joins, the group settles with both owning partitions, the victim
// is killed. p50 and p99 are reported in ms.
//
//	go test ./e2e -run XXX -bench MemberDeath -benchtime 20x
func BenchmarkMemberDeath(b *testing.B) {
	n := testnode.Start(b, "--group-min-session-timeout", "1s", "--group-initial-rebalance-delay", "0s",
		"--group-consumer-session-timeout", failoverSession.String(), "--group-consumer-heartbeat-interval", failoverHeartbeat.String())
	for _, protocol := range []string{"classic", "consumer"} {
		b.Run(protocol, func(b *testing.B) {
			topic := "death-" + protocol
			group := topic + "-g"
			createTopicB(b, n.Addr, topic, 6)
			var mu sync.Mutex
			owned := map[int32]bool{} // the survivor's partitions, from its callbacks
			changed := make(chan struct{}, 1)
			update := func(ps map[string][]int32, add bool) {
				mu.Lock()
				for _, p := range ps[topic] {
					if add {
						owned[p] = true
					} else {
						delete(owned, p)
					}
				}
				mu.Unlock()
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			survivor, err := kgo.NewClient(append(failoverOpts(n.Addr, topic, group, protocol),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { update(ps, true) }),
				kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { update(ps, false) }),
				kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { update(ps, false) }),
			)...)
			if err != nil {
				b.Fatal(err)
			}
			defer survivor.Close()
			go func() {
				for !survivor.PollFetches(context.Background()).IsClientClosed() {
				}
			}()
			owns := func(count int) bool {
				mu.Lock()
				defer mu.Unlock()
				return len(owned) == count
			}
			await := func(what string, cond func() bool) {
				deadline := time.After(time.Minute)
				for !cond() {
					select {
					case <-changed:
					case <-time.After(50 * time.Millisecond):
					case <-deadline:
						b.Fatalf("%s: timed out", what)
					}
				}
			}
			await("the survivor owns every partition", func() bool { return owns(6) })
			var took []time.Duration
			for b.Loop() {
				victim := exec.Command(os.Args[0], "-test.run=^TestHelperFailoverMember$")
				victim.Env = append(os.Environ(), "SKIFF_E2E_FAILOVER_MEMBER="+strings.Join([]string{n.Addr, topic, group, protocol}, "|"))
				if err := victim.Start(); err != nil {
					b.Fatal(err)
				}
				await("the victim takes partitions", func() bool { return owns(3) })
				killed := time.Now()
				victim.Process.Kill()
				victim.Wait()
				await("the survivor gets the victim's partitions", func() bool { return owns(6) })
				took = append(took, time.Since(killed))
			}
			slices.Sort(took)
			pct := func(q float64) float64 {
				return float64(took[min(len(took)-1, int(q*float64(len(took))))].Milliseconds())
			}
			b.ReportMetric(pct(0.5), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(failoverSession.Milliseconds()), "session-ms")
		})
	}
}
