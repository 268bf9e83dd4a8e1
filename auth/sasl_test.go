package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdg "github.com/xdg-go/scram"
)

// users is a credential store in memory: alice has both SCRAM credentials of
// "wonderland", bob only SCRAM-SHA-256 of "builder".
func users(t testing.TB) CredentialLookup {
	t.Helper()
	creds := map[string]ScramCredential{}
	for _, u := range []struct{ user, mech, password string }{
		{"alice", ScramSHA256, "wonderland"}, {"alice", ScramSHA512, "wonderland"}, {"bob", ScramSHA256, "builder"},
	} {
		c, err := ScramCredentialFromPassword(u.mech, u.password, MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		creds[u.user+"/"+u.mech] = c
	}
	return func(_ context.Context, user, mech string) (ScramCredential, bool, error) {
		c, ok := creds[user+"/"+mech]
		return c, ok, nil
	}
}

// converse runs a client mechanism against a server exchange to its end.
func converse(t testing.TB, srv *SASLServer, m sasl.Mechanism) (Principal, error) {
	t.Helper()
	ctx := context.Background()
	session, msg, err := m.Authenticate(ctx, "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	x, err := srv.Start(m.Name())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		answer, done, err := x.Step(ctx, msg)
		if err != nil {
			return Principal{}, err
		}
		clientDone, next, err := session.Challenge(answer)
		if err != nil {
			t.Fatalf("client refuses the server's answer %q: %v", answer, err)
		}
		if done {
			if !clientDone {
				t.Fatal("the server is done, the client is not")
			}
			return x.Principal(), nil
		}
		msg = next
	}
	t.Fatal("no end to the exchange")
	return Principal{}, nil
}

// TestSASLWithFranzGo runs franz-go's client mechanisms (an implementation of
// SCRAM and PLAIN independent of the server's) against the server.
func TestSASLWithFranzGo(t *testing.T) {
	srv := NewSASLServer(users(t))
	for _, tc := range []struct {
		name string
		m    sasl.Mechanism
		want string // principal, or "" for a failure
	}{
		{"scram-256", scram.Auth{User: "alice", Pass: "wonderland"}.AsSha256Mechanism(), "User:alice"},
		{"scram-512", scram.Auth{User: "alice", Pass: "wonderland"}.AsSha512Mechanism(), "User:alice"},
		{"plain", plain.Auth{User: "alice", Pass: "wonderland"}.AsMechanism(), "User:alice"},
		{"plain sha-256 only", plain.Auth{User: "bob", Pass: "builder"}.AsMechanism(), "User:bob"},
		{"plain with authzid", plain.Auth{Zid: "alice", User: "alice", Pass: "wonderland"}.AsMechanism(), "User:alice"},
		{"scram wrong password", scram.Auth{User: "alice", Pass: "wonderlan"}.AsSha512Mechanism(), ""},
		{"scram unknown user", scram.Auth{User: "carol", Pass: "x"}.AsSha256Mechanism(), ""},
		{"scram no credential for the mechanism", scram.Auth{User: "bob", Pass: "builder"}.AsSha512Mechanism(), ""},
		{"scram other authzid", scram.Auth{Zid: "bob", User: "alice", Pass: "wonderland"}.AsSha256Mechanism(), ""},
		{"scram token", scram.Auth{User: "alice", Pass: "wonderland", IsToken: true}.AsSha256Mechanism(), ""},
		{"plain wrong password", plain.Auth{User: "alice", Pass: "x"}.AsMechanism(), ""},
		{"plain unknown user", plain.Auth{User: "carol", Pass: "x"}.AsMechanism(), ""},
		{"plain other authzid", plain.Auth{Zid: "bob", User: "alice", Pass: "wonderland"}.AsMechanism(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := converse(t, srv, tc.m)
			switch {
			case tc.want == "" && !errors.Is(err, ErrAuthenticationFailed):
				t.Fatalf("principal %v, error %v; want ErrAuthenticationFailed", p, err)
			case tc.want != "" && (err != nil || p.String() != tc.want):
				t.Fatalf("principal %v, error %v; want %s", p, err, tc.want)
			}
		})
	}
}

// TestUnknownUserLooksKnown: the first answer to an unknown user has the shape
// of a known user's, with the same salt on every try, so SCRAM does not tell
// which users exist.
func TestUnknownUserLooksKnown(t *testing.T) {
	srv := NewSASLServer(users(t))
	first := func(user string) string {
		x, _ := srv.Start(ScramSHA256)
		answer, done, err := x.Step(context.Background(), []byte("n,,n="+user+",r=abcdefgh"))
		if err != nil || done {
			t.Fatalf("%s: %v %v", user, done, err)
		}
		s := string(answer)
		return s[bytes.IndexByte(answer, ',')+1:] // without the nonce: s=...,i=...
	}
	if a, b := first("nobody"), first("nobody"); a != b {
		t.Errorf("an unknown user's salt changes: %s, %s", a, b)
	}
	if a := first("nobody"); len(a) != len(first("alice")) {
		t.Errorf("an unknown user's answer %q differs in shape from a known one's %q", a, first("alice"))
	}
}

// TestCredentialMatchesLibrary: the keys derived from a salted password are the
// SCRAM library's own.
func TestCredentialMatchesLibrary(t *testing.T) {
	for mech, h := range map[string]xdg.HashGeneratorFcn{ScramSHA256: xdg.SHA256, ScramSHA512: xdg.SHA512} {
		salt := []byte("saltsaltsalt")
		salted, err := SaltedPassword(mech, "pencil", salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		got, err := NewScramCredential(mech, salt, salted, 4096)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := h.NewClientUnprepped("user", "pencil", "")
		want := c.GetStoredCredentials(xdg.KeyFactors{Salt: string(salt), Iters: 4096})
		if !bytes.Equal(got.StoredKey, want.StoredKey) || !bytes.Equal(got.ServerKey, want.ServerKey) {
			t.Errorf("%s: keys differ from the library's", mech)
		}
		if !got.CheckPassword("pencil") || got.CheckPassword("pencil ") {
			t.Errorf("%s: CheckPassword", mech)
		}
	}
	if _, err := NewScramCredential("SCRAM-SHA-1", nil, nil, 4096); err == nil {
		t.Error("SCRAM-SHA-1 accepted")
	}
}

func TestStoreErrorIsNotAFailedLogin(t *testing.T) {
	broken := errors.New("etcd is down")
	srv := NewSASLServer(func(context.Context, string, string) (ScramCredential, bool, error) {
		return ScramCredential{}, false, broken
	})
	for _, m := range []sasl.Mechanism{scram.Auth{User: "a", Pass: "b"}.AsSha256Mechanism(), plain.Auth{User: "a", Pass: "b"}.AsMechanism()} {
		if _, err := converse(t, srv, m); !errors.Is(err, broken) || errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("%s: %v", m.Name(), err)
		}
	}
}

// FuzzSASLExchange gives the server exchanges of every mechanism arbitrary client
// messages. Invariants: nothing panics; no message authenticates (the fuzzer does
// not know a password); every failure is ErrAuthenticationFailed; an exchange
// that failed stays failed.
func FuzzSASLExchange(f *testing.F) {
	for _, seed := range []struct {
		first, second string
	}{
		{"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL", "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="},
		{"n,,n=alice,r=x,tokenauth=true", ""},
		{"y,a=alice,n=alice,r=x", "c=eSxhPWFsaWNlLA==,r=x,p=AAAA"},
		{"p=tls-unique,,n=alice,r=x", "c=,r=,p="},
		{"n,,n=al=2Cice,r=x", "c=biws,r=x,e=oops,p=!!!"},
		{"n,,m=ext,n=alice,r=x", ""},
		{"\x00alice\x00wonderlan", ""},
		{"alice\x00alice\x00x\x00y", ""},
		{"", ""},
	} {
		f.Add(seed.first, seed.second)
	}
	srv := NewSASLServer(users(f))
	f.Fuzz(func(t *testing.T, first, second string) {
		for _, mech := range Mechanisms {
			x, err := srv.Start(mech)
			if err != nil {
				t.Fatal(err)
			}
			failed := false
			for _, msg := range []string{first, second, second} {
				_, done, err := x.Step(context.Background(), []byte(msg))
				if done {
					t.Fatalf("%s authenticated %q, %q", mech, first, second)
				}
				if err != nil && !errors.Is(err, ErrAuthenticationFailed) {
					t.Fatalf("%s: %v is not ErrAuthenticationFailed", mech, err)
				}
				if failed && err == nil {
					t.Fatalf("%s: a failed exchange went on", mech)
				}
				failed = failed || err != nil
			}
		}
	})
}

// TestSCRAMWithLibraryClient runs github.com/xdg-go/scram's client, a third
// implementation, against the server.
func TestSCRAMWithLibraryClient(t *testing.T) {
	srv := NewSASLServer(users(t))
	for mech, h := range map[string]xdg.HashGeneratorFcn{ScramSHA256: xdg.SHA256, ScramSHA512: xdg.SHA512} {
		for password, ok := range map[string]bool{"wonderland": true, "wrong": false} {
			c, _ := h.NewClientUnprepped("alice", password, "")
			conv := c.NewConversation()
			x, _ := srv.Start(mech)
			msg, err := conv.Step("")
			if err != nil {
				t.Fatal(err)
			}
			answer, _, err := x.Step(context.Background(), []byte(msg))
			if err != nil {
				t.Fatal(err)
			}
			if msg, err = conv.Step(string(answer)); err != nil {
				t.Fatal(err)
			}
			answer, done, err := x.Step(context.Background(), []byte(msg))
			if done != ok || (err == nil) != ok {
				t.Fatalf("%s with %s: done %v, %v", mech, password, done, err)
			}
			if ok {
				if _, err := conv.Step(string(answer)); err != nil || !conv.Valid() {
					t.Fatalf("%s: the client refuses the server's signature: %v", mech, err)
				}
			}
		}
	}
}

// TestSCRAMRepeatedClientNonce: librdkafka (2.0) sends client-final-message with
// its own nonce in front of the whole server nonce; Kafka's broker accepts a
// nonce that ends with the server's, and so does Skiff. A nonce that does not
// end with it is refused.
func TestSCRAMRepeatedClientNonce(t *testing.T) {
	srv := NewSASLServer(users(t))
	for _, prefix := range []string{"clientnonce", "", "x"} {
		x, _ := srv.Start(ScramSHA256)
		first, _, err := x.Step(context.Background(), []byte("n,,n=alice,r=clientnonce"))
		if err != nil {
			t.Fatal(err)
		}
		var nonce, salt string
		var iters int
		for _, f := range strings.Split(string(first), ",") {
			switch {
			case strings.HasPrefix(f, "r="):
				nonce = f[2:]
			case strings.HasPrefix(f, "s="):
				salt = f[2:]
			case strings.HasPrefix(f, "i="):
				iters, _ = strconv.Atoi(f[2:])
			}
		}
		rawSalt, _ := base64.StdEncoding.DecodeString(salt)
		salted, _ := SaltedPassword(ScramSHA256, "wonderland", rawSalt, iters)
		cred, _ := NewScramCredential(ScramSHA256, rawSalt, salted, iters)
		withoutProof := "c=biws,r=" + prefix + nonce
		authMsg := "n=alice,r=clientnonce," + string(first) + "," + withoutProof
		clientKey := mac(sha256.New, salted, []byte("Client Key"))
		proof := xor(clientKey, mac(sha256.New, cred.StoredKey, []byte(authMsg)))
		_, done, err := x.Step(context.Background(), []byte(withoutProof+",p="+base64.StdEncoding.EncodeToString(proof)))
		if !done || err != nil {
			t.Errorf("nonce prefix %q: done %v, %v", prefix, done, err)
		}
	}
	x, _ := srv.Start(ScramSHA256)
	first, _, _ := x.Step(context.Background(), []byte("n,,n=alice,r=clientnonce"))
	nonce := strings.TrimPrefix(strings.Split(string(first), ",")[0], "r=")
	if _, _, err := x.Step(context.Background(), []byte("c=biws,r="+nonce+"x,p=AAAA")); !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("a nonce with something after the server's: %v", err)
	}
}
