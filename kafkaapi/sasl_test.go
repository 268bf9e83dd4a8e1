package kafkaapi_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestSASLMechanisms: franz-go produces and consumes with each mechanism, on
// SASL_PLAINTEXT and on SASL_SSL.
func TestSASLMechanisms(t *testing.T) {
	secureNode(t)
	createUser(t, "franz", "franz-secret")
	for _, l := range []string{"SASL_PLAINTEXT", "SASL_SSL"} {
		for _, mech := range []string{"SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"} {
			t.Run(l+"/"+mech, func(t *testing.T) {
				opts := []kgo.Opt{kgo.SASL(saslMechanism(mech, "franz", "franz-secret"))}
				if l == "SASL_SSL" {
					opts = append(opts, kgo.DialTLSConfig(clientTLS(nil)))
				}
				if err := roundTrip(t, secureClient(t, l, opts...), topicName(t, "")); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	waitLog(t, "SASL authentication", "listener=SASL_SSL", "principal=User:franz", "mechanism=PLAIN")
}

// TestSASLRefusals: a wrong password, an unknown user and a malformed message
// get SASL_AUTHENTICATION_FAILED and a closed connection; a mechanism not offered
// UNSUPPORTED_SASL_MECHANISM and a closed connection; a request before
// authentication and a large frame a closed connection. Nothing is written, and
// the node keeps serving.
func TestSASLRefusals(t *testing.T) {
	secureNode(t)
	createUser(t, "refused", "right")
	topic := topicName(t, "")
	addr := secure.addrs["SASL_PLAINTEXT"]

	for name, m := range map[string]string{
		"wrong password SCRAM-SHA-512": "SCRAM-SHA-512/refused/wrong",
		"wrong password SCRAM-SHA-256": "SCRAM-SHA-256/refused/wrong",
		"wrong password PLAIN":         "PLAIN/refused/wrong",
		"unknown user":                 "SCRAM-SHA-512/nobody/right",
		"unknown user PLAIN":           "PLAIN/nobody/right",
	} {
		parts := strings.Split(m, "/")
		c := dial(t, addr)
		r := saslLogin(t, c, saslMechanism(parts[0], parts[1], parts[2]), 1)
		wantCode(t, name, r.ErrorCode, kerr.SaslAuthenticationFailed.Code)
		if r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "Authentication failed") {
			t.Errorf("%s: message %v", name, r.ErrorMessage)
		}
		c.expectClosed(name)
	}
	// Logged once a minute per address and reason: the first of them.
	waitLog(t, "SASL authentication failed", "reason=sasl_authentication")

	// A malformed SCRAM message.
	c := dial(t, addr)
	wantCode(t, "handshake", saslHandshake(c, 1, "SCRAM-SHA-256").ErrorCode, 0)
	garbage := kmsg.NewPtrSASLAuthenticateRequest()
	garbage.SetVersion(2)
	garbage.SASLAuthBytes = []byte("\x00\xffnot scram at all")
	wantCode(t, "garbage", c.do(garbage).(*kmsg.SASLAuthenticateResponse).ErrorCode, kerr.SaslAuthenticationFailed.Code)
	c.expectClosed("garbage SCRAM")

	// A mechanism that is not offered.
	c = dial(t, addr)
	r := saslHandshake(c, 1, "GSSAPI")
	wantCode(t, "GSSAPI", r.ErrorCode, kerr.UnsupportedSaslMechanism.Code)
	if strings.Join(r.SupportedMechanisms, ",") != "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN" {
		t.Errorf("offered %v", r.SupportedMechanisms)
	}
	c.expectClosed("mechanism not offered")

	// Requests before authentication: Metadata (which would create the topic) and
	// a Produce; and one after a handshake, before SaslAuthenticate.
	for _, handshake := range []bool{false, true} {
		c = dial(t, addr)
		if handshake {
			saslHandshake(c, 1, "PLAIN")
		}
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(4)
		md.AllowAutoTopicCreation = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &topic
		md.Topics = append(md.Topics, rt)
		c.send(md)
		c.expectClosed("Metadata before authentication")
	}
	c = dial(t, addr)
	c.send(produceRequest(7, -1, topic, 0, makeBatch(batchOpts{}, "unauthenticated")))
	c.expectClosed("Produce before authentication")

	// Not even an unsupported version is answered before authentication.
	c = dial(t, addr)
	c.write(rawFrame(0, 99, 5, []byte{0, 0}))
	c.expectClosed("Produce v99 before authentication")

	// A frame larger than 64 KiB before authentication is not read.
	c = dial(t, addr)
	var big [4]byte
	binary.BigEndian.PutUint32(big[:], 1<<20)
	c.write(append(big[:], 0, 18))
	c.expectClosed("large frame before authentication")

	// SASL keys where there is no SASL: ILLEGAL_SASL_STATE, the connection stays.
	c = dial(t, secure.addrs["PLAINTEXT"])
	wantCode(t, "SaslHandshake on PLAINTEXT", saslHandshake(c, 1, "PLAIN").ErrorCode, kerr.IllegalSaslState.Code)
	wantCode(t, "ApiVersions after it", c.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ErrorCode, 0)

	// A franz-go client with a wrong password gets the error.
	bad := secureClient(t, "SASL_PLAINTEXT", kgo.SASL(saslMechanism("SCRAM-SHA-512", "refused", "wrong")), kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad)
	cancel()
	if !strings.Contains(errString(err), "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("franz-go with a wrong password: %v", err)
	}

	// Nothing was written; a good login works.
	good := secureClient(t, "SASL_PLAINTEXT", kgo.SASL(saslMechanism("SCRAM-SHA-256", "refused", "right")))
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(good).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has(topic) {
		t.Errorf("topic %s was created by an unauthenticated request", topic)
	}
	if err := roundTrip(t, good, topicName(t, "after")); err != nil {
		t.Fatal(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestSASLFailureDelays: failures from one address are answered later and
// later (at least 100 ms, doubling, capped at 1 s); a good login is answered
// without delay.
func TestSASLFailureDelays(t *testing.T) {
	secureNode(t)
	createUser(t, "delayed", "right")
	var took []time.Duration
	for range 4 {
		c := dial(t, secure.addrs["SASL_PLAINTEXT"])
		start := time.Now()
		r := saslLogin(t, c, saslMechanism("PLAIN", "delayed", "wrong"), 1)
		took = append(took, time.Since(start))
		wantCode(t, "wrong password", r.ErrorCode, kerr.SaslAuthenticationFailed.Code)
	}
	// Each failure waits at least the base delay; the fourth within a minute at
	// least 8 times it (other tests' failures from 127.0.0.1 only add to it).
	for i, d := range took {
		if d < 100*time.Millisecond {
			t.Errorf("failure %d answered after %v, want at least 100ms", i+1, d)
		}
	}
	if took[3] < 800*time.Millisecond {
		t.Errorf("the fourth failure answered after %v, want at least 800ms (delays %v)", took[3], took)
	}
	// A good login from the same address is not delayed: a fifth failure would
	// wait the cap (1 s); the good login is answered well within half of it.
	c := dial(t, secure.addrs["SASL_PLAINTEXT"])
	start := time.Now()
	if r := saslLogin(t, c, saslMechanism("PLAIN", "delayed", "right"), 1); r.ErrorCode != 0 {
		t.Fatalf("good login: %s", errName(r.ErrorCode))
	}
	if d := time.Since(start); d >= 500*time.Millisecond {
		t.Errorf("a good login after failures answered after %v, want it undelayed", d)
	}
}

// TestSASLReauthentication (KIP-368): the session lasts connections.max.reauth.ms
// (session_lifetime_ms says so); a client that does not re-authenticate has its
// connection closed at its next request after that, one that does keeps it.
func TestSASLReauthentication(t *testing.T) {
	secureNode(t)
	createUser(t, "reauth", "secret")
	c := dial(t, secure.addrs["SASL_PLAINTEXT"])
	r := saslLogin(t, c, saslMechanism("SCRAM-SHA-256", "reauth", "secret"), 1)
	authenticated := time.Now()
	wantCode(t, "login", r.ErrorCode, 0)
	if r.SessionLifetimeMillis != secureReauth.Milliseconds() {
		t.Fatalf("session lifetime %d ms, want %d", r.SessionLifetimeMillis, secureReauth.Milliseconds())
	}
	wantCode(t, "ApiVersions within the session", c.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ErrorCode, 0)
	c.do(kmsg.NewPtrMetadataRequest())
	// Re-authenticate in place, as the same user: the session starts again.
	r = saslLogin(t, c, saslMechanism("SCRAM-SHA-256", "reauth", "secret"), 2)
	wantCode(t, "re-authentication", r.ErrorCode, 0)
	authenticated = time.Now()
	<-time.After(time.Until(authenticated.Add(secureReauth + 100*time.Millisecond))) // let the session end
	c.send(kmsg.NewPtrMetadataRequest())
	c.expectClosed("Metadata after the session ended")
	waitLog(t, "SASL session expired")

	// Re-authentication as another user is refused.
	createUser(t, "other", "secret")
	c = dial(t, secure.addrs["SASL_PLAINTEXT"])
	wantCode(t, "login", saslLogin(t, c, saslMechanism("SCRAM-SHA-512", "reauth", "secret"), 1).ErrorCode, 0)
	wantCode(t, "re-authentication as another user",
		saslLogin(t, c, saslMechanism("SCRAM-SHA-512", "other", "secret"), 1).ErrorCode, kerr.SaslAuthenticationFailed.Code)
	c.expectClosed("re-authentication as another user")

	// franz-go re-authenticates on its connection and keeps producing past
	// several session lifetimes.
	cl := secureClient(t, "SASL_PLAINTEXT", kgo.SASL(saslMechanism("SCRAM-SHA-512", "reauth", "secret")))
	topic := topicName(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for end := time.Now().Add(2*secureReauth + time.Second); time.Now().Before(end); {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		<-time.After(100 * time.Millisecond) // a steady trickle, not a flood
	}
	if n := reauthentications(secure.logs.String(), "principal=User:reauth", "mechanism=SCRAM-SHA-512"); n < 2 {
		t.Errorf("no connection of franz-go re-authenticated in place (%d authentications on its busiest)", n)
	}
}

// reauthentications is the largest number of SASL authentications logged for
// one remote address (one connection) among lines with all of parts.
func reauthentications(logs string, parts ...string) int {
	n := map[string]int{}
	best := 0
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, `msg="SASL authentication"`) || !containsAll(line, parts) {
			continue
		}
		i := strings.Index(line, "remote=")
		if i < 0 {
			continue
		}
		remote, _, _ := strings.Cut(line[i:], " ")
		n[remote]++
		best = max(best, n[remote])
	}
	return best
}

// TestSASLHandshakeV0: after SaslHandshake v0 the tokens travel as bare frames
// (kafka-python 2.0): PLAIN's answer is an empty frame, SCRAM's are its
// messages; a failure closes the connection.
func TestSASLHandshakeV0(t *testing.T) {
	secureNode(t)
	createUser(t, "raw", "secret")
	handshake := func(c *kconn, mech string) {
		wantCode(t, "SaslHandshake v0", saslHandshake(c, 0, mech).ErrorCode, 0)
	}
	token := func(c *kconn, b []byte) []byte {
		c.write(append(binaryLen(b), b...))
		var size [4]byte
		c.readFull(size[:])
		out := make([]byte, binary.BigEndian.Uint32(size[:]))
		c.readFull(out)
		return out
	}

	c := dial(t, secure.addrs["SASL_PLAINTEXT"])
	handshake(c, "PLAIN")
	if got := token(c, []byte("raw\x00raw\x00secret")); len(got) != 0 {
		t.Fatalf("PLAIN answer %q, want an empty frame", got)
	}
	wantCode(t, "ApiVersions after a raw PLAIN login", c.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ErrorCode, 0)
	c.do(kmsg.NewPtrMetadataRequest())

	c = dial(t, secure.addrs["SASL_SSL"])
	c.nc = tlsClient(t, c.nc)
	handshake(c, "SCRAM-SHA-512")
	session, msg, err := scram.Auth{User: "raw", Pass: "secret"}.AsSha512Mechanism().Authenticate(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		answer := token(c, msg)
		if done, msg, err = session.Challenge(answer); err != nil {
			t.Fatal(err)
		}
	}
	c.do(kmsg.NewPtrMetadataRequest())

	c = dial(t, secure.addrs["SASL_PLAINTEXT"])
	handshake(c, "PLAIN")
	wrong := []byte("raw\x00raw\x00wrong")
	c.write(append(binaryLen(wrong), wrong...))
	c.expectClosed("a raw PLAIN login with a wrong password")
}

// TestSASLEveryKeyBeforeAuth: before authentication a SASL listener answers only
// ApiVersions, SaslHandshake and SaslAuthenticate. Every other key franz-go
// knows (those the node serves at their highest version, the rest at v0; keys
// added since the SASL work, such as the share and KIP-848 keys and
// DescribeTopicPartitions, included) closes the connection unanswered, before a
// handshake and after one.
func TestSASLEveryKeyBeforeAuth(t *testing.T) {
	secureNode(t)
	versions := dial(t, secure.addrs["PLAINTEXT"]).do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	served := map[int16]int16{}
	for _, k := range versions.ApiKeys {
		served[k.ApiKey] = k.MaxVersion
	}
	for _, k := range []int16{68, 75, 76, 78} { // keys added since; the node must still serve them for the check to mean something
		if _, ok := served[k]; !ok {
			t.Fatalf("key %d (%s) is not served", k, kmsg.NameForKey(k))
		}
	}
	checked := 0
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil || key == 17 || key == 18 || key == 36 {
			continue
		}
		req.SetVersion(served[key])
		for _, handshake := range []bool{false, true} {
			c := dial(t, secure.addrs["SASL_PLAINTEXT"])
			if handshake {
				wantCode(t, "handshake", saslHandshake(c, 1, "SCRAM-SHA-512").ErrorCode, 0)
			}
			c.send(req)
			c.expectClosed(fmt.Sprintf("key %d (%s) v%d before authentication (handshake %v)", key, kmsg.NameForKey(key), served[key], handshake))
		}
		checked++
	}
	if checked < 60 {
		t.Fatalf("only %d keys checked", checked)
	}
	// The listener still serves ApiVersions before authentication.
	c := dial(t, secure.addrs["SASL_PLAINTEXT"])
	wantCode(t, "ApiVersions", c.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ErrorCode, 0)
}
