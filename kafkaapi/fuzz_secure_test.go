package kafkaapi_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzSecureConn sends garbage where a secure listener expects a TLS handshake
// or SASL messages, to the shared secure node: mode 0 writes the bytes to the
// SSL listener instead of a ClientHello; mode 1 sends them as the bare token
// after a SaslHandshake v0 (PLAIN); mode 2 as the SASL messages of a SCRAM
// exchange begun by SaslHandshake v1 (split at the first 0xff). A Metadata
// request follows. Invariants: the node never panics; garbage never
// authenticates (the Metadata request is never answered, the connection closes
// or stays silent); SaslAuthenticate answers are SASL_AUTHENTICATION_FAILED or
// carry the next SCRAM message; afterwards a new connection is served.
func FuzzSecureConn(f *testing.F) {
	secureNode(f)
	f.Add(uint8(0), []byte("\x16\x03\x01\x00\x05hello"))
	f.Add(uint8(0), []byte("\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\x00\x00"))
	f.Add(uint8(1), []byte("\x00user\x00password"))
	f.Add(uint8(1), []byte("\xff\xff\xff\xff"))
	f.Add(uint8(2), []byte("n,,n=franz,r=abc\xffc=biws,r=abc,p=AAAA"))
	f.Add(uint8(2), []byte("y,a=x,n=franz,r=\x00\xff"))
	f.Fuzz(func(t *testing.T, mode uint8, data []byte) {
		const metadataCorr = 99
		switch mode % 3 {
		case 0:
			nc, err := net.DialTimeout("tcp", secure.addrs["SSL"], ioTimeout)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			c := &kconn{t: t, nc: nc}
			if c.tryWrite(data) == nil {
				c.tryWrite(encodeRequest(kmsg.NewPtrMetadataRequest(), metadataCorr))
			}
			expectNoAnswer(t, c, metadataCorr)
		case 1:
			c := dial(t, secure.addrs["SASL_PLAINTEXT"])
			saslHandshake(c, 0, "PLAIN")
			if c.tryWrite(append(binary.BigEndian.AppendUint32(nil, uint32(len(data))), data...)) == nil {
				c.tryWrite(encodeRequest(kmsg.NewPtrMetadataRequest(), metadataCorr))
			}
			expectNoAnswer(t, c, metadataCorr)
		case 2:
			c := dial(t, secure.addrs["SASL_PLAINTEXT"])
			saslHandshake(c, 1, "SCRAM-SHA-256")
			first, second := data, []byte(nil)
			if i := bytes.IndexByte(data, 0xff); i >= 0 {
				first, second = data[:i], data[i+1:]
			}
			for _, msg := range [][]byte{first, second} {
				req := kmsg.NewPtrSASLAuthenticateRequest()
				req.SetVersion(1)
				req.SASLAuthBytes = msg
				corr := c.send(req)
				frame, closed := c.closedOrAnswered("SaslAuthenticate with garbage")
				if closed {
					break
				}
				r, err := parseResponse(36, 1, corr, frame)
				if err != nil {
					t.Fatal(err)
				}
				resp := r.(*kmsg.SASLAuthenticateResponse)
				if resp.ErrorCode == kerr.SaslAuthenticationFailed.Code {
					c.expectClosed("after a failed SaslAuthenticate")
					break
				}
				if resp.ErrorCode != 0 {
					t.Fatalf("SaslAuthenticate: %s", errName(resp.ErrorCode))
				}
			}
			if c.tryWrite(encodeRequest(kmsg.NewPtrMetadataRequest(), metadataCorr)) == nil {
				expectNoAnswer(t, c, metadataCorr)
			}
		}
		check := dial(t, secure.addrs["SASL_PLAINTEXT"])
		wantCode(t, "ApiVersions on a new connection", check.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ErrorCode, 0)
	})
}

// expectNoAnswer reads until the connection closes or stays silent; an answer
// with correlation id corr fails the test.
func expectNoAnswer(t *testing.T, c *kconn, corr int32) {
	t.Helper()
	for {
		frame, err := c.readFrame(fuzzConnWait)
		if err != nil {
			return // closed, or silent
		}
		if len(frame) >= 4 && int32(binary.BigEndian.Uint32(frame)) == corr {
			t.Fatalf("garbage authenticated: Metadata was answered")
		}
	}
}
