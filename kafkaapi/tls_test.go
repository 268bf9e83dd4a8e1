package kafkaapi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
