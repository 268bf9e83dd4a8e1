package kafkaapi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
	"skiff/internal/syncbuf"
	"skiff/internal/testcerts"
)

// TestTLSClientCertificate: on the SSL listener a client with a certificate of the
// node's CA produces and consumes, under the principal its certificate names.
func TestTLSClientCertificate(t *testing.T) {
	secureNode(t)
	cl := secureClient(t, "SSL", kgo.DialTLSConfig(clientTLS(secure.client)))
	if err := roundTrip(t, cl, topicName(t, "")); err != nil {
		t.Fatal(err)
	}
	waitLog(t, "TLS connection", "listener=SSL", "principal=User:client")
}

// TestTLSRefusals: a client without a certificate, with one of another CA, or
// trusting another CA gets no connection; a plaintext client on the TLS port and
// a TLS client on the plaintext port get a closed connection and a log line that
// says which. The node keeps serving.
func TestTLSRefusals(t *testing.T) {
	secureNode(t)
	stranger := secure.other.Issue(t, "stranger", pkix.Name{CommonName: "stranger"})
	// Each refused client tries to write: a produce (which would create the
	// topic), or a Metadata request that would create it.
	topic := topicName(t, "")
	for name, cfg := range map[string]*tls.Config{
		"no certificate":            clientTLS(nil),
		"certificate of another CA": clientTLS(stranger),
	} {
		cl := secureClient(t, "SSL", kgo.DialTLSConfig(cfg), kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
		if err == nil {
			t.Errorf("%s: the SSL listener answered", name)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(name)}).FirstErr(); err == nil {
			t.Errorf("%s: a produce was acknowledged", name)
		}
		cancel()
	}
	waitLog(t, "TLS handshake failed", "listener=SSL")

	// Plaintext on the TLS port: a Metadata request that would create the topic,
	// and the connection is closed.
	c := dial(t, secure.addrs["SSL"])
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(4)
	md.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &topic
	md.Topics = append(md.Topics, rt)
	c.send(md)
	c.expectClosed("plaintext Metadata on the SSL listener")
	waitLog(t, "does not speak TLS on a TLS listener", "listener=SSL")

	// TLS on the plaintext ports: the handshake fails, the connection is closed.
	for _, l := range []string{"PLAINTEXT", "SASL_PLAINTEXT"} {
		nc, err := net.DialTimeout("tcp", secure.addrs[l], ioTimeout)
		if err != nil {
			t.Fatal(err)
		}
		tc := tls.Client(nc, clientTLS(secure.client))
		tc.SetDeadline(time.Now().Add(ioTimeout))
		if err := tc.Handshake(); err == nil {
			t.Errorf("TLS handshake on the %s listener succeeded", l)
		}
		tc.Close()
	}
	// Refusals are logged once a minute per address and reason: the first one.
	waitLog(t, "TLS client on a listener without TLS", "listener=PLAINTEXT")

	// The node still serves, on every listener.
	if err := roundTrip(t, secureClient(t, "SSL", kgo.DialTLSConfig(clientTLS(secure.client))), topicName(t, "ssl")); err != nil {
		t.Fatal(err)
	}
	plain := secureClient(t, "PLAINTEXT")
	if err := roundTrip(t, plain, topicName(t, "plain")); err != nil {
		t.Fatal(err)
	}
	// Nothing was written: the refused clients' topic does not exist.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(plain).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has(topic) {
		t.Errorf("topic %s was created by a refused TLS client", topic)
	}
}

// TestTLSCertificateRotation: replacing the node's certificate files changes the
// certificate new connections get; a connection made before keeps working.
func TestTLSCertificateRotation(t *testing.T) {
	secureNode(t)
	dialSSL := func() *tls.Conn {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: ioTimeout}, "tcp", secure.addrs["SSL"], clientTLS(secure.client))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	old := &kconn{t: t, nc: dialSSL(), corr: 1}
	if r := old.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	rotated := secure.ca.Issue(t, "rotated", pkix.Name{CommonName: "rotated"})
	installPair(t, rotated)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := dialSSL()
		cn := c.ConnectionState().PeerCertificates[0].Subject.CommonName
		c.Close()
		if cn == "rotated" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new connections still get %q", cn)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := old.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
}

// tlsClient runs a TLS handshake on nc, trusting the secure node's CA.
func tlsClient(t testing.TB, nc net.Conn) net.Conn {
	t.Helper()
	tc := tls.Client(nc, clientTLS(nil))
	tc.SetDeadline(time.Now().Add(ioTimeout))
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	tc.SetDeadline(time.Time{})
	return tc
}

// TestTLSSilentClient: a client that connects to a TLS listener and sends nothing
// is closed once the handshake bound passes (socket-read-timeout, or
// connections.max.idle.ms if shorter), not before, and the refusal is logged;
// meanwhile another client of the same listener is served (a silent handshake
// holds up no one).
func TestTLSSilentClient(t *testing.T) {
	const bound = 2 * time.Second
	for name, timeouts := range map[string]func(*appliance.Config){
		"read timeout": func(c *appliance.Config) { c.ReadTimeout, c.IdleTimeout = bound, time.Hour },
		"idle timeout": func(c *appliance.Config) { c.ReadTimeout, c.IdleTimeout = time.Hour, bound },
	} {
		t.Run(name, func(t *testing.T) {
			tn := startTLSNode(t, timeouts)
			start := time.Now()
			var silent []*kconn
			for range 8 {
				silent = append(silent, dial(t, tn.addrs["SSL"]))
			}
			// Served while the silent ones wait for their handshake.
			served := tn.dialSSL(t)
			if r := served.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
				t.Fatalf("ApiVersions: error %d", r.ErrorCode)
			}
			if took := time.Since(start); took >= bound {
				t.Fatalf("the served client took %v, past the handshake bound %v: held up by the silent ones (or a machine too slow for this test)", took, bound)
			}
			for i, c := range silent {
				// Still open: a read waits, then times out.
				c.nc.SetReadDeadline(time.Now().Add(time.Millisecond))
				if _, err := c.nc.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("silent client %d: read %v before the handshake bound, want a timeout", i, err)
				}
			}
			// Closed once the bound passes: well before the other timeout (an hour).
			for i, c := range silent {
				c.nc.SetReadDeadline(start.Add(bound + 10*time.Second))
				_, err := c.nc.Read(make([]byte, 1))
				took := time.Since(start)
				switch {
				case errors.Is(err, os.ErrDeadlineExceeded):
					t.Fatalf("silent client %d: still open after %v, want it closed after the handshake bound %v", i, took, bound)
				case !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET):
					t.Fatalf("silent client %d: read %v, want the connection closed", i, err)
				case took < bound:
					t.Fatalf("silent client %d: closed after %v, before the handshake bound %v", i, took, bound)
				}
			}
			waitLogIn(t, tn.logs, "TLS handshake failed", "listener=SSL")
			// And the listener still serves.
			again := tn.dialSSL(t)
			if r := again.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
				t.Fatalf("ApiVersions: error %d", r.ErrorCode)
			}
		})
	}
}

// TestTLSWrongProtocolMemory: a plaintext Kafka frame whose size claims 1 GiB,
// sent to a TLS listener, and a TLS ClientHello sent to a plaintext listener (its
// first four bytes read as a size of about 369 MB) are closed, logged, and make
// the node allocate next to nothing: 20 of each allocate under 16 MiB in all (the
// node runs in this process; the count covers everything it does meanwhile).
func TestTLSWrongProtocolMemory(t *testing.T) {
	tn := startTLSNode(t, func(*appliance.Config) {})
	hello := clientHello(t)
	if size := binary.BigEndian.Uint32(hello); size < 300<<20 {
		t.Fatalf("the ClientHello reads as a size of %d bytes, want one over 300 MB", size)
	}
	huge := encodeRequest(kmsg.NewPtrMetadataRequest(), 1)
	binary.BigEndian.PutUint32(huge, 1<<30)
	refused := func() {
		c := dial(t, tn.addrs["SSL"])
		c.write(huge)
		c.expectClosed("a plaintext frame of 1 GiB on the SSL listener")
		c.nc.Close()
		c = dial(t, tn.addrs["PLAINTEXT"])
		c.write(hello)
		c.expectClosed("a TLS ClientHello on the PLAINTEXT listener")
		c.nc.Close()
	}
	refused() // first use: the refusal log, metrics labels
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 20 {
		refused()
	}
	runtime.ReadMemStats(&after)
	const limit = 16 << 20
	if n := after.TotalAlloc - before.TotalAlloc; n > limit {
		t.Errorf("20 refused clients of each kind: %d MiB allocated, want under %d MiB", n>>20, limit>>20)
	}
	if after.HeapAlloc > before.HeapAlloc && after.HeapAlloc-before.HeapAlloc > limit {
		t.Errorf("the heap grew by %d MiB, want under %d MiB", (after.HeapAlloc-before.HeapAlloc)>>20, limit>>20)
	}
	t.Logf("allocated %d KiB; heap %d -> %d KiB", (after.TotalAlloc-before.TotalAlloc)>>10, before.HeapAlloc>>10, after.HeapAlloc>>10)
	waitLogIn(t, tn.logs, "does not speak TLS on a TLS listener", "listener=SSL")
	waitLogIn(t, tn.logs, "TLS client on a listener without TLS", "listener=PLAINTEXT")
	// The node still serves both listeners.
	if !dial(t, tn.addrs["PLAINTEXT"]).served() {
		t.Error("the PLAINTEXT listener closed a good client")
	}
	if !tn.dialSSL(t).served() {
		t.Error("the SSL listener closed a good client")
	}
}

// tlsNode is a node of its own with a PLAINTEXT and an SSL listener (no client
// certificates asked).
type tlsNode struct {
	logs  *syncbuf.Buffer   // the node's logs, from debug level
	addrs map[string]string // the listeners' addresses by name
	ca    *testcerts.CA     // the CA of the node's certificate
}

// startTLSNode starts a tlsNode, closed when the test ends; configure changes
// its settings.
func startTLSNode(t *testing.T, configure func(*appliance.Config)) *tlsNode {
	t.Helper()
	dir := t.TempDir()
	tn := &tlsNode{logs: &syncbuf.Buffer{}, addrs: map[string]string{}, ca: testcerts.NewCA(t, dir, "ca")}
	server := tn.ca.Issue(t, "server", pkix.Name{CommonName: "server"})
	n, err := startNode(filepath.Join(dir, "data"), func(c *appliance.Config) {
		c.NodeName = "kafkaapi-tls"
		c.Logger = slog.New(slog.NewTextHandler(tn.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0"}
		c.TLSCert, c.TLSKey = server.CertFile, server.KeyFile
		configure(c)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, a := range n.ListenerAddrs() {
		listener, addr, _ := strings.Cut(a, "://")
		tn.addrs[listener] = addr
	}
	return tn
}

// dialSSL is a connection to the SSL listener, after the TLS handshake.
func (tn *tlsNode) dialSSL(t *testing.T) *kconn {
	t.Helper()
	c := dial(t, tn.addrs["SSL"])
	pool := x509.NewCertPool()
	pool.AddCert(tn.ca.Cert)
	tc := tls.Client(c.nc, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	tc.SetDeadline(time.Now().Add(ioTimeout))
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	tc.SetDeadline(time.Time{})
	c.nc = tc
	return c
}

// clientHello is the first record a TLS client sends: its ClientHello.
func clientHello(t *testing.T) []byte {
	t.Helper()
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tls.Client(a, &tls.Config{ServerName: "127.0.0.1", InsecureSkipVerify: true}).Handshake()
	}()
	defer func() { a.Close(); b.Close(); <-done }()
	b.SetReadDeadline(time.Now().Add(ioTimeout))
	hello := make([]byte, 5)
	if _, err := io.ReadFull(b, hello); err != nil {
		t.Fatal(err)
	}
	hello = append(hello, make([]byte, binary.BigEndian.Uint16(hello[3:]))...)
	if _, err := io.ReadFull(b, hello[5:]); err != nil {
		t.Fatal(err)
	}
	if hello[0] != 0x16 {
		t.Fatalf("the client's first record has type %d, want a handshake (22)", hello[0])
	}
	return hello
}
