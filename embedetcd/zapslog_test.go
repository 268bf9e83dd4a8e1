package embedetcd

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
)

func attrMap(r slog.Record) map[string]any {
	m := map[string]any{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.Any()
		return true
	})
	return m
}

func TestZapToSlog(t *testing.T) {
	rec := newRecorder()
	closing := new(atomic.Bool)
	lg := newZapLogger(rec, closing).With(zap.String("local-member-id", "abc"))

	lg.Info("hello", zap.Int("n", 3), zap.Duration("took", time.Second), zap.Strings("urls", []string{"a", "b"}))
	shutdown := func() {
		lg.Error("setting up serving from embedded etcd failed.", zap.Error(errors.New("http: Server closed")))
	}
	shutdown() // not closing: a real error
	closing.Store(true)
	shutdown() // closing: demoted
	lg.Error("setting up serving from embedded etcd failed.", zap.Error(errors.New("disk on fire")))
	lg.Warn("simple token is not cryptographically signed")

	rs := rec.all()
	if len(rs) != 5 {
		t.Fatalf("got %d records, want 5", len(rs))
	}
	a := attrMap(rs[0])
	if rs[0].Level != slog.LevelInfo || rs[0].Message != "hello" || a["local_member_id"] != "abc" ||
		a["n"] != int64(3) || a["took"] != time.Second {
		t.Errorf("info record: %v %q %v", rs[0].Level, rs[0].Message, a)
	}
	if urls, ok := a["urls"].([]any); !ok || len(urls) != 2 || urls[1] != "b" {
		t.Errorf("urls = %#v", a["urls"])
	}
	want := []slog.Level{slog.LevelError, slog.LevelDebug, slog.LevelError, slog.LevelDebug}
	for i, w := range want {
		if got := rs[i+1].Level; got != w {
			t.Errorf("record %d %q %v: level %v, want %v", i+1, rs[i+1].Message, attrMap(rs[i+1]), got, w)
		}
	}
	if e := attrMap(rs[1])["error"]; e != "http: Server closed" {
		t.Errorf("error attr = %#v", e)
	}
}

func TestZapToSlogLevels(t *testing.T) {
	var n atomic.Int32
	h := countingHandler{level: slog.LevelInfo, n: &n}
	closing := new(atomic.Bool)
	closing.Store(true)
	lg := newZapLogger(h, closing)
	lg.Debug("dropped")
	lg.Warn("simple token is not cryptographically signed") // demoted below Info: dropped
	lg.Info("kept")
	if n.Load() != 1 {
		t.Fatalf("handled %d records, want 1", n.Load())
	}
}

// TestRaftLinesMatchedWithoutMemberID: raft starts its lines with the member id,
// which the benign list does not name; the rest of the line is compared.
func TestRaftLinesMatchedWithoutMemberID(t *testing.T) {
	rec := newRecorder()
	lg := newZapLogger(rec, new(atomic.Bool)).Named("raft")
	lg.Warn("cdacb144ca4a09ef cannot campaign at term 1 since there are still pending configuration changes to apply")
	lg.Warn("cdacb144ca4a09ef cannot campaign at term 7 since there are still pending configuration changes to apply")
	rs := rec.all()
	if len(rs) != 2 || rs[0].Level != slog.LevelDebug || rs[1].Level != slog.LevelWarn {
		t.Fatalf("records %v", rs)
	}
}

type countingHandler struct {
	level slog.Level
	n     *atomic.Int32
}

func (h countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h countingHandler) Handle(context.Context, slog.Record) error    { h.n.Add(1); return nil }
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h countingHandler) WithGroup(string) slog.Handler                { return h }

func TestAddresses(t *testing.T) {
	host, _ := os.Hostname()
	for _, c := range []struct{ listen, advertise, dial string }{
		{"127.0.0.1:9093", "127.0.0.1:9093", "127.0.0.1:9093"},
		{"0.0.0.0:9093", net.JoinHostPort(host, "9093"), "127.0.0.1:9093"},
		{"[::]:9093", net.JoinHostPort(host, "9093"), "[::1]:9093"},
		{"10.1.2.3:9094", "10.1.2.3:9094", "10.1.2.3:9094"},
	} {
		if got := advertiseAddr(c.listen); got != c.advertise {
			t.Errorf("advertiseAddr(%s) = %s, want %s", c.listen, got, c.advertise)
		}
		if got := dialAddr(c.listen); got != c.dial {
			t.Errorf("dialAddr(%s) = %s, want %s", c.listen, got, c.dial)
		}
	}
	if got, err := bindAddr(":9093"); err != nil || got != "0.0.0.0:9093" {
		t.Errorf("bindAddr(:9093) = %s, %v", got, err)
	}
	got, err := bindAddr("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, port, _ := net.SplitHostPort(got); port == "0" || port == "" {
		t.Errorf("bindAddr(127.0.0.1:0) = %s", got)
	}
	cfg, err := Config{Dir: "x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClientAddr != "0.0.0.0:9093" || cfg.PeerAddr != "0.0.0.0:9094" || cfg.Name == "" ||
		cfg.HeartbeatInterval != DefaultHeartbeatInterval || cfg.ElectionTimeout != DefaultElectionTimeout {
		t.Errorf("defaults: %+v", cfg)
	}
	if _, err := (Config{}).withDefaults(); !errors.Is(err, ErrNoDir) {
		t.Errorf("no dir: %v", err)
	}
}

// stepClock is a zap clock whose time tests move.
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time                         { return c.now }
func (c *stepClock) NewTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

// TestRetryWarningsLimited: the etcd client's warning for each failed attempt of
// a request (every 25 ms while its member has no leader) is logged at its level
// once, then at most once per repeatEvery with how many went at debug since;
// other warnings, and the same message's other fields, are untouched; loggers
// made with With share the limit.
func TestRetryWarningsLimited(t *testing.T) {
	rec := newRecorder()
	clock := &stepClock{now: time.Unix(1_700_000_000, 0)}
	lg := newZapLogger(rec, new(atomic.Bool)).WithOptions(zap.WithClock(clock))
	session := lg.With(zap.String("for", "session")) // a session client's logger
	retry := func(l *zap.Logger, attempt uint) {
		l.Warn("retrying of unary invoker failed", zap.String("method", "/etcdserverpb.KV/Range"),
			zap.Uint("attempt", attempt), zap.Error(errors.New("rpc error: code = Unavailable desc = etcdserver: no leader")))
	}
	// 30 s of a cut: an attempt every 25 ms on each of two loggers.
	for i := range 1200 {
		retry(lg, uint(i%100))
		retry(session, uint(i%100))
		if i == 600 {
			lg.Warn("request stats") // another warning: kept
		}
		clock.now = clock.now.Add(25 * time.Millisecond)
	}
	var warns []slog.Record
	debug, others := 0, 0
	for _, r := range rec.all() {
		switch {
		case r.Message != "retrying of unary invoker failed":
			others++
			if r.Level != slog.LevelWarn {
				t.Errorf("%q at %v", r.Message, r.Level)
			}
		case r.Level == slog.LevelWarn:
			warns = append(warns, r)
		case r.Level == slog.LevelDebug:
			debug++
		default:
			t.Errorf("retry line at %v", r.Level)
		}
	}
	if len(warns) != 3 || others != 1 || debug+len(warns) != 2400 {
		t.Fatalf("%d warnings, %d at debug, %d others: want 3 in 30 s, 2397, 1", len(warns), debug, others)
	}
	if _, ok := attrMap(warns[0])["repeated_at_debug"]; ok {
		t.Errorf("first warning %v", attrMap(warns[0]))
	}
	held := 0
	for i, w := range warns[1:] {
		a := attrMap(w)
		n, _ := a["repeated_at_debug"].(int64)
		held += int(n)
		if n <= 0 || a["method"] != "/etcdserverpb.KV/Range" || a["error"] == nil {
			t.Errorf("warning %d: %v", i+1, a)
		}
		if gap := w.Time.Sub(warns[i].Time); gap < repeatEvery {
			t.Errorf("warning %d %v after the one before", i+1, gap)
		}
	}
	// All but those after the last kept warning are counted in a later one.
	if tail := debug - held; tail < 0 || tail >= 2*int(repeatEvery/(25*time.Millisecond)) {
		t.Errorf("%d at debug, %d counted", debug, held)
	}

	// With debug off, the held-back lines are not written at all.
	var n atomic.Int32
	quiet := newZapLogger(countingHandler{level: slog.LevelInfo, n: &n}, new(atomic.Bool)).WithOptions(zap.WithClock(clock))
	for range 100 {
		retry(quiet, 0)
		clock.now = clock.now.Add(25 * time.Millisecond)
	}
	if n.Load() != 1 {
		t.Errorf("handled %d of 100 retry lines in 2.5 s, want 1", n.Load())
	}
}
