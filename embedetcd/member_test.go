package embedetcd

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a slog.Handler keeping every record, for assertions on logs.
type recorder struct {
	mu      *sync.Mutex
	records *[]slog.Record
	attrs   []slog.Attr
}

func newRecorder() *recorder {
	return &recorder{mu: new(sync.Mutex), records: new([]slog.Record)}
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	rec = rec.Clone()
	rec.AddAttrs(r.attrs...)
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.records = append(*r.records, rec)
	return nil
}

func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	c.attrs = append(append([]slog.Attr(nil), r.attrs...), as...)
	return &c
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) all() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Record(nil), *r.records...)
}

func testConfig(t testing.TB, logger *slog.Logger) Config {
	t.Helper()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return Config{
		Name:       "n1",
		Dir:        filepath.Join(t.TempDir(), "etcd"),
		ClientAddr: "127.0.0.1:0",
		PeerAddr:   "127.0.0.1:0",
		Logger:     logger,
	}
}

func hostPort(u string) string { return strings.TrimPrefix(u, "http://") }

func TestStartReadyClose(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, nil)
	t0 := time.Now()
	m, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ready := time.Since(t0)
	t.Logf("ready in %v (heartbeat %v, election %v)", ready, DefaultHeartbeatInterval, DefaultElectionTimeout)

	// The URLs report the ports actually bound, not 0.
	if got, want := hostPort(m.ClientURL()), m.etcd.Clients[0].Addr().String(); got != want {
		t.Errorf("ClientURL %s, bound %s", got, want)
	}
	if got, want := hostPort(m.PeerURL()), m.etcd.Peers[0].Addr().String(); got != want {
		t.Errorf("PeerURL %s, bound %s", got, want)
	}
	if err := m.Healthy(ctx); err != nil {
		t.Fatalf("Healthy: %v", err)
	}
	if _, err := m.Client().Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := m.Client().Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("Get: %v %v", resp, err)
	}

	t1 := time.Now()
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("closed in %v", time.Since(t1))
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := m.Healthy(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Healthy after Close: %v, want ErrClosed", err)
	}
	select {
	case err := <-m.Err():
		t.Fatalf("Err after clean Close: %v", err)
	default:
	}
	// Both ports are free again.
	for _, a := range []string{hostPort(m.ClientURL()), hostPort(m.PeerURL())} {
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("port still bound after Close: %v", err)
		}
		l.Close()
	}
}

func TestCleanStartStopLogsNoErrors(t *testing.T) {
	rec := newRecorder()
	m, err := Start(context.Background(), testConfig(t, slog.New(rec)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	demoted := 0
	for _, r := range rec.all() {
		if r.Level >= slog.LevelWarn {
			t.Errorf("%v %q %v", r.Level, r.Message, attrString(r))
		}
		if r.Level == slog.LevelDebug && r.Message == "setting up serving from embedded etcd failed." {
			demoted++
		}
	}
	// The filter did the work: etcd did log its shutdown errors, at debug.
	if demoted == 0 {
		t.Error("no demoted shutdown line seen; has etcd's shutdown logging changed?")
	}
}

func attrString(r slog.Record) string {
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(a.String())
		b.WriteByte(' ')
		return true
	})
	return b.String()
}

func TestNeverReadyIsStopped(t *testing.T) {
	// The initial cluster names a second member that never starts: no quorum,
	// so the member can never become ready.
	cfg := testConfig(t, nil)
	var err error
	if cfg.ClientAddr, err = bindAddr(cfg.ClientAddr); err != nil {
		t.Fatal(err)
	}
	if cfg.PeerAddr, err = bindAddr(cfg.PeerAddr); err != nil {
		t.Fatal(err)
	}
	ghost, err := bindAddr("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.InitialCluster = "n1=http://" + cfg.PeerAddr + ",ghost=http://" + ghost

	const wait = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	t0 := time.Now()
	m, err := Start(ctx, cfg)
	took := time.Since(t0)
	if err == nil {
		m.Close()
		t.Fatal("Start succeeded without quorum")
	}
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNotReady wrapping DeadlineExceeded", err)
	}
	t.Logf("gave up and stopped in %v: %v", took, err)
	if took > wait+10*time.Second {
		t.Fatalf("Start took %v to give up", took)
	}
	l, err := net.Listen("tcp", cfg.ClientAddr)
	if err != nil {
		t.Fatalf("client port still bound: %v", err)
	}
	l.Close()
}

func TestRestartKeepsData(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, nil)
	m, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Client().Put(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	cfg.ClientAddr, cfg.PeerAddr = hostPort(m.ClientURL()), hostPort(m.PeerURL())
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	rec := newRecorder()
	cfg.Logger = slog.New(rec)
	m, err = Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	resp, err := m.Client().Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v1" {
		t.Fatalf("after restart Get: %v %v", resp, err)
	}
	for _, r := range rec.all() {
		if r.Level >= slog.LevelWarn {
			t.Errorf("restart logged %v %q %v", r.Level, r.Message, attrString(r))
		}
	}
}

// A taken port is an error that Start's retry recognises: etcd's bind error
// is what isAddrInUse reads, and a port given by the caller is not picked again.
func TestStartOnTakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := testConfig(t, nil)
	cfg.ClientAddr = l.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := Start(ctx, cfg)
	if err == nil {
		m.Close()
		t.Fatal("Start bound a port another listener holds")
	}
	if !isAddrInUse(err) {
		t.Fatalf("isAddrInUse(%v) = false, want true", err)
	}
	cfg.PeerAddr = "127.0.0.1:1"
	if cfg.picksPorts() {
		t.Fatal("picksPorts with both ports given")
	}
}
