package kafkaapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"skiff/appliance"
	"skiff/internal/leakcheck"
)

// TestMain runs the suite, closes the shared node, and fails the package if
// goroutines outlive the tests, waiting for etcd's slow ones to end (see leakcheck).
func TestMain(m *testing.M) { leakcheck.Main(m, closeShared) }

// Settings of the shared node that tests rely on.
const (
	// sharedMaxRequestBytes is the shared node's socket.request.max.bytes.
	sharedMaxRequestBytes = 1 << 20
)

// shared is one node that most tests use, started on first use and closed by
// TestMain: a node start costs an etcd start, and the suite must stay fast.
var shared struct {
	once sync.Once
	node *appliance.Node
	dir  string
	err  error
}

// sharedNode returns the shared node. It has a 1 MiB request limit and checks
// retention every 50 ms (topics opt in with their own retention configs).
func sharedNode(t testing.TB) *appliance.Node {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "kafkaapi-test-")
		if shared.err != nil {
			return
		}
		shared.node, shared.err = startNode(shared.dir, func(c *appliance.Config) {
			c.MaxRequestBytes = sharedMaxRequestBytes
			c.RetentionCheckInterval = 50 * time.Millisecond
		})
	})
	if shared.err != nil {
		t.Fatalf("start shared node: %v", shared.err)
	}
	return shared.node
}

// fuzzCleanup closes FuzzConn's node, when it was started.
var fuzzCleanup = func() error { return nil }

func closeShared() error {
	var err error
	if shared.node != nil {
		err = shared.node.Close()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	return errors.Join(err, closeSecure(), closeACLNode(), fuzzCleanup())
}

// testLogger discards node logs unless SKIFF_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("SKIFF_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startNode starts a node on loopback with every port chosen by the kernel.
func startNode(dir string, opts ...func(*appliance.Config)) (*appliance.Node, error) {
	cfg := appliance.Config{
		DataDir:         dir,
		Listen:          "127.0.0.1:0",
		EtcdClient:      "127.0.0.1:0",
		EtcdPeer:        "127.0.0.1:0",
		HTTP:            "127.0.0.1:0",
		NodeName:        "kafkaapi-test",
		ShutdownTimeout: 10 * time.Second,
		Logger:          testLogger(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return appliance.Start(ctx, cfg)
}
