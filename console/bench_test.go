package console_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"skiff/cluster"
	"skiff/console"
	"skiff/embedetcd"
)

// BenchmarkPages renders the console's pages of a cluster of 1,000 topics and
// 10,000 partitions (RF 3 over three nodes): the metadata in a real etcd member
// read through the metadata cache, three consoles on loopback HTTP that ask each
// other for their replicas, as the nodes' consoles do. Only the nodes' sources
// are stand-ins (every partition holds 1 MiB). The budget of issue 18 is 300 ms a
// page; ms/page is the figure to compare with it.
//
//	go test -run '^$' -bench BenchmarkPages -benchtime 20x ./console/
func BenchmarkPages(b *testing.B) {
	const topics, partitions = 1000, 10
	cache, consoles := scaleCluster(b, topics, partitions)
	snap := cache.Snapshot()
	if got := snap.Overview().Partitions; got != topics*partitions {
		b.Fatalf("the cache holds %d partitions, want %d", got, topics*partitions)
	}
	base := consoles[0]
	for _, page := range []struct{ name, path string }{
		{"topics", "/topics"},                     // the first 100 topics
		{"topics-all", "/topics?per=1000"},        // all 1,000 on one page
		{"topics-filtered", "/topics?q=topic-05"}, // 110 of them
		{"overview", "/"},
		{"topic", "/topics/topic-0500"},
		{"groups", "/groups"},
	} {
		b.Run(page.name, func(b *testing.B) {
			var bytes int64
			for b.Loop() {
				resp, err := http.Get(base + page.path)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %s, %v", page.path, resp.Status, err)
				}
				bytes = n
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/page")
			b.ReportMetric(float64(bytes), "bytes/page")
		})
	}
}

// scaleCluster creates the topics in a fresh etcd member, registers three brokers
// whose HTTP addresses are consoles over stand-in sources, and returns the cache
// and the consoles' base URLs.
func scaleCluster(b *testing.B, topics, partitions int) (*cluster.Cache, []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	m, err := embedetcd.Start(ctx, embedetcd.Config{Name: "bench", Dir: filepath.Join(b.TempDir(), "etcd"),
		ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	store := cluster.New(m.Client(), quiet)
	if _, err := store.EnsureCluster(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range topics {
		t := cluster.Topic{Name: fmt.Sprintf("topic-%04d", i), Partitions: int32(partitions), ReplicationFactor: 3}
		for p := range partitions {
			first := int32((i + p) % 3)
			t.Assignment = append(t.Assignment, []int32{first + 1, (first+1)%3 + 1, (first+2)%3 + 1})
		}
		if _, err := store.CreateTopic(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
	cache, err := cluster.StartCache(ctx, m.Client(), quiet)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cache.Close() })
	var urls []string
	for id := int32(1); id <= 3; id++ {
		c := console.New(console.Config{Source: standIn{id: id, cache: cache}, Logger: quiet})
		mux := http.NewServeMux()
		c.Register(mux)
		srv := httptest.NewServer(mux)
		b.Cleanup(func() {
			srv.Close()
			c.Close()
		})
		host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		p, _ := strconv.Atoi(port)
		sess, err := store.RegisterBroker(ctx, cluster.Broker{ID: id, Host: host, Port: int32(p), HTTP: srv.Listener.Addr().String()}, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sess.Close() })
		urls = append(urls, srv.URL)
	}
	// Wait on the snapshot that was read: the change after it closes its
	// channel (cache.Changed() after the read could miss the third broker).
	for snap := cache.Snapshot(); len(snap.Brokers()) < 3; snap = cache.Snapshot() {
		select {
		case <-snap.Changed():
		case <-ctx.Done():
			b.Fatal("the cache never listed the three brokers")
		}
	}
	return cache, urls
}

// standIn is a node's source whose replicas are the partitions the metadata puts
// on it, each of 1 MiB; it coordinates no group and stores no records.
type standIn struct {
	id    int32
	cache *cluster.Cache
}

func (s standIn) Started() bool                          { return true }
func (s standIn) NodeID() int32                          { return s.id }
func (s standIn) Snapshot() *cluster.Snapshot            { return s.cache.Snapshot() }
func (s standIn) BrokerDefaults() cluster.BrokerDefaults { return cluster.BrokerDefaults{} }
func (s standIn) PeerKey() []byte                        { return []byte("the stand-ins' console key") }
func (s standIn) Groups() []console.Group                { return nil }
func (s standIn) Group(string) (console.GroupMembers, bool) {
	return console.GroupMembers{}, false
}
func (s standIn) Members(context.Context) []console.EtcdMember { return nil }
func (s standIn) Read(string, int32, int64, int64) (console.Batches, error) {
	return console.Batches{}, console.ErrNotHere
}
func (s standIn) OffsetForTimestamp(string, int32, int64) (int64, error) {
	return 0, console.ErrNotHere
}

func (s standIn) Local(context.Context) console.Local {
	l := console.Local{NodeID: s.id}
	snap := s.cache.Snapshot()
	for _, t := range snap.Topics() {
		for p, replicas := range t.Assignment {
			for _, r := range replicas {
				if r != s.id {
					continue
				}
				st, _ := snap.Partition(t.Name, int32(p))
				l.Replicas = append(l.Replicas, console.Replica{Topic: t.Name, Partition: int32(p), Leader: st.Leader == s.id,
					HWM: 1000, LogEnd: 1000, Size: 1 << 20})
			}
		}
	}
	return l
}
