package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/testnode"
)

// Settings of the node TestHostileClients attacks, and what it holds it to.
const (
	hostileMaxConns = 1300
	hostilePerIP    = 600
	// hostileReadTimeout is socket-read-timeout: well above the few seconds a
	// process on a loaded machine can go without CPU. A node that stalls while it
	// reads a frame finds the frame's deadline passed when it runs again, however
	// fast the client sent it, and so does a client that stalls while it sends one.
	hostileReadTimeout = 8 * time.Second
	hostileQueuedBytes = 32 << 20
	// hostileRSSBound is the resident memory the node must stay under: its own
	// ~50 MiB (etcd, Pebble), the request memory (queued-max-request-bytes, 32 MiB)
	// twice over for the collector's headroom, and ~30 KiB for each of up to 1,300
	// connections, with margin. Measured: 100 to 155 MiB; about 500 MiB with the
	// budget disabled, as the LargeFrames attack is then read all at once.
	hostileRSSBound = 200 << 20
)

// TestHostileClients runs a real node against hostile clients, one attack after
// another, while a franz-go client keeps producing (acks=all) and consuming:
//  1. 1,000 connections opened and left idle (500 each from two addresses);
//  2. 100 clients sending request frames byte by byte in time (served), and 20 too
//     slowly (closed after socket-read-timeout, logged once per address);
//  3. length prefixes of 2 GiB and more (refused unread, without allocating);
//  4. large frames: 384 MiB of Produce requests at once, their last bytes held back
//     (twelve times queued-max-request-bytes: read two at a time), and Metadata and Fetch
//     requests built to decode into as much memory as possible (refused);
//  5. random bytes from 50 connections (refused or answered, never a crash);
//  6. max-connections-per-ip and max-connections (connections beyond closed at
//     accept).
//
// After each attack the franz-go client must have made progress; at the end every
// acknowledged record is consumed once, in order, the idle connections are still
// served, the node's peak RSS (VmHWM) stayed under hostileRSSBound, and each refusal
// was logged once per client address and reason. The test raises its own
// RLIMIT_NOFILE soft limit to the hard limit (it holds ~1,400 sockets).
func TestHostileClients(t *testing.T) {
	raiseNoFile(t, 4000)
	n := testnode.Start(t,
		"--max-connections", strconv.Itoa(hostileMaxConns),
		"--max-connections-per-ip", strconv.Itoa(hostilePerIP),
		"--socket-read-timeout", hostileReadTimeout.String(),
		"--queued-max-request-bytes", strconv.Itoa(hostileQueuedBytes),
		"--socket-request-max-bytes", strconv.Itoa(hostileQueuedBytes))
	rss := watchRSS(t, n.PID())
	topic := "hostile"
	createTopic(t, n.Addr, topic, 1)
	w := startSteadyClient(t, n.Addr, topic)
	w.waitProgress(t, 5, 20*time.Second)
	t.Logf("before the attacks: node RSS %d MiB", rss.now()>>20)
	phase := func(name string, attack func(t *testing.T)) {
		t.Helper()
		start := time.Now()
		before := w.acked.Load()
		t.Run(name, attack)
		w.waitProgress(t, before+20, 20*time.Second)
		t.Logf("%s: %v, normal client at %d acknowledged records, node RSS %d MiB", name, time.Since(start).Round(time.Millisecond), w.acked.Load(), rss.now()>>20)
	}

	var idle []net.Conn
	outer := t // the idle connections outlive their phase
	phase("IdleConnections", func(t *testing.T) {
		for i := range 1000 {
			idle = append(idle, dialFromT(outer, fmt.Sprintf("127.0.0.%d", 2+i%2), n.Addr))
		}
		// Every one is accepted: a round trip on a sample.
		for i := 0; i < len(idle); i += 100 {
			if err := apiVersions(idle[i]); err != nil {
				t.Fatalf("idle connection %d: %v", i, err)
			}
		}
	})

	phase("ByteByByte", func(t *testing.T) {
		frame := apiVersionsFrame(7)
		var wg sync.WaitGroup
		errs := make(chan error, 120)
		for i := range 120 {
			slow := i >= 100
			ip := fmt.Sprintf("127.0.1.%d", i%50)
			if slow {
				ip = fmt.Sprintf("127.0.2.%d", (i-100)/2)
			}
			c := dialFromT(t, ip, n.Addr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				pause := 15 * time.Millisecond // 45 bytes: about 0.7 s, well in time
				if slow {
					pause = time.Second // about 45 s: cut off 8 s after the first 6 bytes
				}
				for j := range frame {
					if _, err := c.Write(frame[j : j+1]); err != nil {
						break // closed by the node
					}
					time.Sleep(pause) // the client's pace, not synchronisation
				}
				err := readAnswer(c, 7)
				switch {
				case slow && err == nil:
					errs <- fmt.Errorf("client %d sending a byte every %v was served", i, pause)
				case !slow && err != nil:
					errs <- fmt.Errorf("client %d sending a byte every %v: %v", i, pause, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	phase("HugeLengthPrefix", func(t *testing.T) {
		for _, size := range []uint32{0x80000000, 0x7fffffff, hostileQueuedBytes + 1, 0xffffffff} {
			c := dialFromT(t, "127.0.3.1", n.Addr)
			c.Write(binary.BigEndian.AppendUint32(nil, size))
			if err := readAnswer(c, 0); err == nil {
				t.Fatalf("length prefix %#x answered", size)
			}
		}
	})

	phase("LargeFrames", func(t *testing.T) {
		// 24 Produce frames of 16 MiB (384 MiB, twelve times queued-max-request-bytes
		// and about twice the RSS bound), each sent but for its last byte, which
		// follows a second later: had the node read them all at once it would hold
		// them all. It reads two at a time; each is answered (MESSAGE_TOO_LARGE).
		// Then Metadata frames naming 250,000 topics and Fetch frames whose topic
		// count claims every byte (about 500 KB each, just under the 1/64 of
		// queued-max-request-bytes a request other than Produce may be): decoded
		// one at a time, then refused.
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		lastByte := time.Now().Add(time.Second)
		send := func(ip string, frame []byte, answered bool) {
			c := dialFromT(t, ip, n.Addr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.SetWriteDeadline(time.Now().Add(60 * time.Second))
				_, err := c.Write(frame[:len(frame)-1])
				if err == nil {
					time.Sleep(time.Until(lastByte)) // the attack's timing, not synchronisation
					_, err = c.Write(frame[len(frame)-1:])
				}
				if err != nil && answered {
					errs <- err
					return
				}
				if err := readAnswer(c, 9); (err == nil) != answered {
					errs <- fmt.Errorf("%d-byte frame of key %d: answered %v (%v), want answered %v", len(frame), frame[5], err == nil, err, answered)
				}
			}()
		}
		for i := range 24 {
			send(fmt.Sprintf("127.0.7.%d", i), produceFrame(topic, 16<<20), true)
		}
		wg.Wait()
		metadata := binary.BigEndian.AppendUint32(nil, 250_000)
		metadata = append(metadata, make([]byte, 2*250_000)...)
		fetch := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		fetch = binary.BigEndian.AppendUint32(fetch, 245_000)
		fetch = append(fetch, make([]byte, 490_000)...)
		for i := range 5 {
			send(fmt.Sprintf("127.0.8.%d", i), hostileFrame(3, 0, 9, metadata), false)
			send(fmt.Sprintf("127.0.9.%d", i), hostileFrame(1, 4, 9, fetch), false)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	phase("RandomBytes", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 7))
		var wg sync.WaitGroup
		for i := range 50 {
			c := dialFromT(t, fmt.Sprintf("127.0.4.%d", i%10), n.Addr)
			junk := make([]byte, 1+rng.IntN(64<<10))
			for j := range junk {
				junk[j] = byte(rng.Uint32())
			}
			if i%5 == 0 { // a plausible frame size: the body is read, then refused
				binary.BigEndian.PutUint32(junk, uint32(len(junk)-4))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.SetDeadline(time.Now().Add(hostileReadTimeout + time.Second))
				c.Write(junk)
				io.Copy(io.Discard, c) // until the node closes it (or answers and waits)
			}()
		}
		wg.Wait()
	})

	phase("ConnectionLimits", func(t *testing.T) {
		// 127.0.0.2 has 500 idle connections: 100 more are accepted, then refused.
		var extra []net.Conn
		for range hostilePerIP - 500 {
			extra = append(extra, dialFromT(t, "127.0.0.2", n.Addr))
		}
		if err := apiVersions(extra[len(extra)-1]); err != nil {
			t.Fatalf("connection %d from 127.0.0.2: %v", hostilePerIP, err)
		}
		for range 20 {
			if apiVersions(dialFromT(t, "127.0.0.2", n.Addr)) == nil {
				t.Fatal("connection above max-connections-per-ip served")
			}
		}
		// Fill the node up to max-connections from other addresses, then one more.
		served := 0
		for i := 0; ; i++ {
			c := dialFromT(t, fmt.Sprintf("127.0.5.%d", i/200), n.Addr)
			if apiVersions(c) != nil {
				break
			}
			extra = append(extra, c)
			served++
			if served > hostileMaxConns {
				t.Fatal("no connection refused above max-connections")
			}
		}
		for range 20 {
			if apiVersions(dialFromT(t, "127.0.6.1", n.Addr)) == nil {
				t.Fatal("connection above max-connections served")
			}
		}
		t.Logf("%d more connections accepted before max-connections", served)
		for _, c := range extra {
			c.Close()
		}
	})

	// The idle connections survived all of it.
	for i := 0; i < len(idle); i += 50 {
		if err := apiVersions(idle[i]); err != nil {
			t.Errorf("idle connection %d: %v", i, err)
		}
		idle[i].Close()
	}
	w.finish(t)
	if peak := rss.peak(); peak > hostileRSSBound {
		t.Errorf("node peak RSS %d MiB, above the bound of %d MiB", peak>>20, hostileRSSBound>>20)
	} else {
		t.Logf("node peak RSS (VmHWM) %d MiB, bound %d MiB", peak>>20, hostileRSSBound>>20)
	}

	// Each refusal is logged once per client address and reason.
	lines := refusalLines(t, n.Logs())
	for key, count := range lines {
		if count != 1 {
			t.Errorf("refusal %s logged %d times", key, count)
		}
	}
	for _, want := range []string{
		"read_timeout 127.0.2.0", "read_timeout 127.0.2.9",
		"request_size 127.0.3.1",
		"max_connections_per_ip 127.0.0.2", "max_connections 127.0.6.1",
	} {
		if lines[want] == 0 {
			t.Errorf("no refusal logged for %s; logged: %v", want, lines)
		}
	}
	for i := range 10 {
		if i%5 == 0 {
			continue // only frames of a plausible size: some are answered (UNSUPPORTED_VERSION)
		}
		if lines[fmt.Sprintf("malformed_request 127.0.4.%d", i)]+lines[fmt.Sprintf("request_size 127.0.4.%d", i)] == 0 {
			t.Errorf("random bytes from 127.0.4.%d: no refusal logged", i)
		}
	}
}

// raiseNoFile raises this process's RLIMIT_NOFILE soft limit to the hard limit, and
// skips the test if that is below need.
func raiseNoFile(t *testing.T, need uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	if lim.Cur < need {
		t.Skipf("RLIMIT_NOFILE hard limit %d is below the %d sockets this test opens", lim.Max, need)
	}
}

// dialFromT connects to addr from the loopback address ip, closing it at the end.
func dialFromT(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// apiVersionsFrame is an ApiVersions v0 request with correlation id corr.
func apiVersionsFrame(corr int32) []byte {
	b := []byte{0, 0, 0, 0, 0, 18, 0, 0}
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 35)
	b = append(b, "hostile-test-client-sending-slowly!"...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// hostileFrame frames a request: size, key, version, correlation id, client id, body.
func hostileFrame(key, version int16, corr int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 7)
	b = append(b, "hostile"...)
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// produceFrame is a Produce v7 request (acks=1) of size bytes for partition 0 of
// topic whose records are junk (zeros).
func produceFrame(topic string, size int) []byte {
	b := []byte{0xff, 0xff, 0, 1, 0, 0, 0x75, 0x30, 0, 0, 0, 1} // no transactional id, acks 1, 30 s, 1 topic
	b = binary.BigEndian.AppendUint16(b, uint16(len(topic)))
	b = append(b, topic...)
	b = append(b, 0, 0, 0, 1, 0, 0, 0, 0) // 1 partition: 0
	records := size - 4 - 19 - len(b) - 4
	b = binary.BigEndian.AppendUint32(b, uint32(records))
	return hostileFrame(0, 7, 9, append(b, make([]byte, records)...))
}

// readAnswer reads one response frame and checks its correlation id; an error means
// no answer (closed, or nothing within 15 s).
func readAnswer(c net.Conn, corr int32) error {
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return fmt.Errorf("answer of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return fmt.Errorf("answer with correlation id %d, want %d", got, corr)
	}
	return nil
}

var apiVersionsCorr atomic.Int32

// apiVersions makes one ApiVersions round trip on c.
func apiVersions(c net.Conn) error {
	corr := apiVersionsCorr.Add(1)
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(apiVersionsFrame(corr)); err != nil {
		return err
	}
	return readAnswer(c, corr)
}

// rssWatch samples a process's resident memory.
type rssWatch struct {
	pid  int
	stop chan struct{}
	done chan struct{}
	max  atomic.Int64
}

func watchRSS(t *testing.T, pid int) *rssWatch {
	w := &rssWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(50 * time.Millisecond) // sampling, not synchronisation
		defer tick.Stop()
		for {
			if v := w.now(); v > w.max.Load() {
				w.max.Store(v)
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(w.stop); <-w.done })
	return w
}

// status reads a field of /proc/<pid>/status in bytes (0 if unreadable).
func (w *rssWatch) status(field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", w.pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (w *rssWatch) now() int64 { return w.status("VmRSS") }

// peak is the largest RSS of the process so far: the kernel's VmHWM, or the largest
// sample if that is larger.
func (w *rssWatch) peak() int64 { return max(w.status("VmHWM"), w.max.Load()) }

// steadyClient produces one record at a time with franz-go (acks=all, idempotent)
// and consumes them with another client.
type steadyClient struct {
	prod, cons *kgo.Client
	ctx        context.Context
	cancel     context.CancelFunc
	done       chan struct{}
	acked      atomic.Int64
	err        atomic.Value
}

func startSteadyClient(t *testing.T, addr, topic string) *steadyClient {
	w := &steadyClient{done: make(chan struct{})}
	w.prod = newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1000))
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go func() {
		defer close(w.done)
		for i := 0; w.ctx.Err() == nil; i++ {
			ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
			err := w.prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%08d", i))}).FirstErr()
			cancel()
			if err != nil {
				if w.ctx.Err() == nil {
					w.err.Store(fmt.Errorf("produce record %d: %w", i, err))
				}
				return
			}
			w.acked.Add(1)
			time.Sleep(5 * time.Millisecond) // a steady pace, not synchronisation
		}
	}()
	w.cons = newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	t.Cleanup(func() { w.cancel(); <-w.done })
	return w
}

// waitProgress waits until at least want records are acknowledged.
func (w *steadyClient) waitProgress(t *testing.T, want int64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for w.acked.Load() < want {
		if err, _ := w.err.Load().(error); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("normal client stalled: %d records acknowledged, want %d within %v", w.acked.Load(), want, within)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// finish stops producing and reads back every acknowledged record, once and in order.
func (w *steadyClient) finish(t *testing.T) {
	t.Helper()
	w.cancel()
	<-w.done
	if err, _ := w.err.Load().(error); err != nil {
		t.Fatal(err)
	}
	acked := int(w.acked.Load())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next := 0
	for next < acked {
		fs := w.cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d acknowledged records", next, acked)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("%08d", next); string(r.Value) != want && next < acked {
				t.Fatalf("record %d: %q, want %q", next, r.Value, want)
			}
			next++
		})
	}
	t.Logf("normal client: %d records produced (acks=all) and consumed in order", acked)
}

// refusalLines counts the node's refusal log lines by "reason client".
func refusalLines(t *testing.T, logs string) map[string]int {
	out := map[string]int{}
	for _, line := range strings.Split(logs, "\n") {
		var rec struct{ Msg, Reason, Client string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Reason != "" && rec.Client != "" && strings.HasPrefix(rec.Msg, "closing") {
			out[rec.Reason+" "+rec.Client]++
		}
	}
	return out
}
