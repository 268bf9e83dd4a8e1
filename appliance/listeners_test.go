package appliance

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestListenerSettings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		want  string // the listeners as name/protocol/addr/advertise, then the inter-broker one
		error string
	}{
		{name: "listen", cfg: Config{Listen: ":9092", Advertise: "kafka:9092"},
			want: "PLAINTEXT/PLAINTEXT/:9092/kafka:9092 inter=PLAINTEXT"},
		{name: "listeners", cfg: Config{Listeners: []string{"SASL_SSL://:9093", "PLAINTEXT://127.0.0.1:9092"},
			AdvertisedListeners: []string{"SASL_SSL://kafka.example:9093"}},
			want: "SASL_SSL/SASL_SSL/:9093/kafka.example:9093 PLAINTEXT/PLAINTEXT/127.0.0.1:9092/ inter=SASL_SSL"},
		{name: "named", cfg: Config{Listeners: []string{"EXTERNAL://:9093", "INTERNAL://:9094"},
			ListenerProtocolMap: []string{"INTERNAL:SSL", "EXTERNAL:SASL_SSL"}, InterBrokerListener: "INTERNAL"},
			want: "EXTERNAL/SASL_SSL/:9093/ INTERNAL/SSL/:9094/ inter=INTERNAL"},
		{name: "unknown name", cfg: Config{Listeners: []string{"EXTERNAL://:9093"}},
			error: "neither a security protocol nor mapped"},
		{name: "twice", cfg: Config{Listeners: []string{"SSL://:9093", "SSL://:9094"}}, error: "named twice"},
		{name: "no scheme", cfg: Config{Listeners: []string{":9093"}}, error: "want NAME://HOST:PORT"},
		{name: "bad port", cfg: Config{Listeners: []string{"SSL://:x"}}, error: "port must be a number"},
		{name: "bad map", cfg: Config{Listeners: []string{"A://:1"}, ListenerProtocolMap: []string{"A:TLS"}}, error: "want NAME:PROTOCOL"},
		{name: "advertised unknown", cfg: Config{Listeners: []string{"SSL://:1"}, AdvertisedListeners: []string{"SASL_SSL://h:1"}},
			error: "no listener is named SASL_SSL"},
		{name: "advertised wildcard", cfg: Config{Listeners: []string{"SSL://:1"}, AdvertisedListeners: []string{"SSL://:1"}},
			error: "needs a host and a port"},
		{name: "advertise and listeners", cfg: Config{Listeners: []string{"SSL://:1"}, Advertise: "h:1"}, error: "advertise excludes listeners"},
		{name: "advertised without listeners", cfg: Config{Listen: ":1", AdvertisedListeners: []string{"PLAINTEXT://h:1"}}, error: "needs listeners"},
		{name: "inter-broker unknown", cfg: Config{Listeners: []string{"SSL://:1"}, InterBrokerListener: "PLAINTEXT"}, error: "no listener is named so"},
		{name: "inter-broker with listen", cfg: Config{Listen: ":1", InterBrokerListener: "SSL"}, error: "not a listener"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs, inter, err := tc.cfg.listeners()
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("error %v, want %q", err, tc.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, s := range specs {
				parts = append(parts, s.name+"/"+string(s.protocol)+"/"+s.addr+"/"+s.advertise)
			}
			if got := strings.Join(parts, " ") + " inter=" + specs[inter].name; got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestMetadataPerListener: a client is told the brokers' addresses on the listener
// it came in on.
func TestMetadataPerListener(t *testing.T) {
	n := startLoopbackNode(t, Config{
		Listeners:           []string{"EXTERNAL://127.0.0.1:0", "INTERNAL://127.0.0.1:0"},
		ListenerProtocolMap: []string{"EXTERNAL:PLAINTEXT", "INTERNAL:PLAINTEXT"},
		AdvertisedListeners: []string{"EXTERNAL://kafka.example:19092"},
	})
	addrs := n.ListenerAddrs()
	if len(addrs) != 2 || !strings.HasPrefix(addrs[0], "EXTERNAL://127.0.0.1:") || !strings.HasPrefix(addrs[1], "INTERNAL://127.0.0.1:") {
		t.Fatalf("listener addresses %v", addrs)
	}
	internal := strings.TrimPrefix(addrs[1], "INTERNAL://")
	for _, tc := range []struct{ dial, wantHost, wantPort string }{
		{n.KafkaAddr(), "kafka.example", "19092"},
		{internal, "127.0.0.1", internal[strings.LastIndexByte(internal, ':')+1:]},
	} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(tc.dial))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// A request to the seed itself: the brokers it lists are not dialled.
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].Host != tc.wantHost || itoa(resp.Brokers[0].Port) != tc.wantPort {
			t.Errorf("Metadata on %s: brokers %+v, want %s:%s", tc.dial, resp.Brokers, tc.wantHost, tc.wantPort)
		}
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
