package cluster

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"skiff/embedetcd"
	"skiff/internal/leakcheck"
)

// TestMain fails the package if goroutines outlive the tests, waiting for etcd's
// slow ones to end (see leakcheck).
func TestMain(m *testing.M) { leakcheck.Main(m) }

var quiet = slog.New(slog.DiscardHandler)

// startMember starts a single-member etcd on loopback, closed at cleanup.
func startMember(t *testing.T, dir string) *embedetcd.Member {
	t.Helper()
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := embedetcd.Start(ctx, embedetcd.Config{
		Name: "n1", Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// newClient returns a separate client to m, closed at cleanup (Close is
// idempotent, so tests may close it earlier).
func newClient(t *testing.T, m *embedetcd.Member) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func startCache(t *testing.T, c *clientv3.Client) *Cache {
	t.Helper()
	cache, err := StartCache(testCtx(t), c, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	return cache
}

// testCtx is a context that ends with the test or after 30 s.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func oneReplica(partitions int, broker int32) [][]int32 {
	a := make([][]int32, partitions)
	for i := range a {
		a[i] = []int32{broker}
	}
	return a
}

// recorder is a slog.Handler keeping every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func newRecorder() *recorder { return &recorder{} }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }
func (r *recorder) all() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Record(nil), r.records...)
}
