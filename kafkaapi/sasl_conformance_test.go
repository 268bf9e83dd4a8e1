package kafkaapi_test

// Conformance of the SASL keys (17, 36) and the SCRAM credential keys (50, 51) at
// each version.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/auth"
)

func init() {
	for key, f := range map[int16]conformance{
		17: conformSaslHandshake, 36: conformSaslAuthenticate,
		50: conformDescribeUserScramCredentials, 51: conformAlterUserScramCredentials,
	} {
		conformanceTests[key] = f
	}
}

// conformSaslHandshake: on a listener without SASL, ILLEGAL_SASL_STATE and the
// offered mechanisms; on a SASL listener a login that goes on in bare frames (v0)
// or SaslAuthenticate (v1).
func conformSaslHandshake(t *testing.T, c *kconn, versions []int16) {
	secureNode(t)
	createUser(t, "conform-17", "secret")
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrSASLHandshakeRequest()
			req.SetVersion(v)
			req.Mechanism = "SCRAM-SHA-256"
			r := c.do(req).(*kmsg.SASLHandshakeResponse)
			wantCode(t, "SaslHandshake on PLAINTEXT", r.ErrorCode, kerr.IllegalSaslState.Code)
			if !slices.Equal(r.SupportedMechanisms, []string{"SCRAM-SHA-512", "SCRAM-SHA-256"}) {
				t.Errorf("mechanisms %v, want the default SCRAM-SHA-512, SCRAM-SHA-256", r.SupportedMechanisms)
			}

			sc := dial(t, secure.addrs["SASL_PLAINTEXT"])
			req.Mechanism = "PLAIN"
			r = sc.do(req).(*kmsg.SASLHandshakeResponse)
			wantCode(t, "SaslHandshake on SASL_PLAINTEXT", r.ErrorCode, 0)
			login := []byte("\x00conform-17\x00secret")
			if v == 0 {
				sc.write(append(binaryLen(login), login...))
				var answer [4]byte
				sc.readFull(answer[:])
				if answer != [4]byte{} {
					t.Fatalf("PLAIN answer %x, want an empty frame", answer)
				}
			} else {
				a := kmsg.NewPtrSASLAuthenticateRequest()
				a.SetVersion(1)
				a.SASLAuthBytes = login
				wantCode(t, "SaslAuthenticate", sc.do(a).(*kmsg.SASLAuthenticateResponse).ErrorCode, 0)
			}
			md := sc.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
			if len(md.Brokers) != 1 || md.Brokers[0].Port != int32(portOf(secure.addrs["SASL_PLAINTEXT"])) {
				t.Errorf("Metadata after login: brokers %+v, want the SASL_PLAINTEXT listener", md.Brokers)
			}
		})
	}
}

// conformSaslAuthenticate: without a SASL listener, ILLEGAL_SASL_STATE with a
// message; on one, a SCRAM login at the version, answering the session lifetime
// from v1.
func conformSaslAuthenticate(t *testing.T, c *kconn, versions []int16) {
	secureNode(t)
	createUser(t, "conform-36", "secret")
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrSASLAuthenticateRequest()
			req.SetVersion(v)
			req.SASLAuthBytes = []byte("n,,n=x,r=y")
			r := c.do(req).(*kmsg.SASLAuthenticateResponse)
			wantCode(t, "SaslAuthenticate on PLAINTEXT", r.ErrorCode, kerr.IllegalSaslState.Code)
			if r.ErrorMessage == nil {
				t.Error("no error message")
			}
			sc := dial(t, secure.addrs["SASL_PLAINTEXT"])
			r = saslLogin(t, sc, saslMechanism("SCRAM-SHA-256", "conform-36", "secret"), v)
			wantCode(t, "SCRAM login", r.ErrorCode, 0)
			want := secureReauth.Milliseconds()
			if v == 0 {
				want = 0
			}
			if r.SessionLifetimeMillis != want {
				t.Errorf("session lifetime %d ms, want %d", r.SessionLifetimeMillis, want)
			}
			if !strings.HasPrefix(string(r.SASLAuthBytes), "v=") {
				t.Errorf("last answer %q, want the server signature", r.SASLAuthBytes)
			}
		})
	}
}

// alterScram sends an AlterUserScramCredentials request at version v.
func alterScram(t *testing.T, c *kconn, v int16, dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion,
	ups []kmsg.AlterUserSCRAMCredentialsRequestUpsertion) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.SetVersion(v)
	req.Deletions, req.Upsertions = dels, ups
	resp := c.do(req).(*kmsg.AlterUserSCRAMCredentialsResponse)
	out := map[string]int16{}
	for _, r := range resp.Results {
		if _, dup := out[r.User]; dup {
			t.Errorf("two results for %q", r.User)
		}
		if (r.ErrorCode != 0) != (r.ErrorMessage != nil) {
			t.Errorf("%s: error %s with message %v", r.User, errName(r.ErrorCode), r.ErrorMessage)
		}
		out[r.User] = r.ErrorCode
	}
	return out
}

func upsertion(user string, mech int8, iterations int32, password string) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = user, mech, iterations
	u.Salt = []byte("0123456789abcdef")
	name := map[int8]string{1: auth.ScramSHA256, 2: auth.ScramSHA512}[mech]
	if name == "" {
		name = auth.ScramSHA256
	}
	u.SaltedPassword, _ = auth.SaltedPassword(name, password, u.Salt, int(max(iterations, 1)))
	return u
}

func deletion(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, mech
	return d
}

// conformAlterUserScramCredentials: one result per user; a user with any
// invalid change keeps its credentials; a deleted credential is gone.
func conformAlterUserScramCredentials(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			u := topicName(t, "") // unique per run
			got := alterScram(t, c, v, nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
				upsertion(u+"-ok", 1, 4096, "pw"), upsertion(u+"-ok", 2, 8192, "pw"),
				upsertion(u+"-few", 1, 4095, "pw"),
				upsertion(u+"-many", 2, 16385, "pw"),
				upsertion(u+"-mech", 3, 4096, "pw"),
				upsertion(u+"-twice", 1, 4096, "pw"), upsertion(u+"-twice", 1, 4096, "pw2"),
				upsertion("", 1, 4096, "pw"),
				upsertion(u+"-mixed", 1, 4096, "pw"), upsertion(u+"-mixed", 2, 1, "pw"),
			})
			want := map[string]int16{
				u + "-ok": 0, u + "-few": kerr.UnacceptableCredential.Code, u + "-many": kerr.UnacceptableCredential.Code,
				u + "-mech": kerr.UnsupportedSaslMechanism.Code, u + "-twice": kerr.DuplicateResource.Code,
				"": kerr.UnacceptableCredential.Code, u + "-mixed": kerr.UnacceptableCredential.Code,
			}
			for user, code := range want {
				if got[user] != code {
					t.Errorf("%q: %s, want %s", user, errName(got[user]), errName(code))
				}
			}
			if len(got) != len(want) {
				t.Errorf("results %v", got)
			}
			described := describeScram(t, c, 0, u+"-ok", u+"-mixed")
			if described[u+"-ok"] != "SCRAM-SHA-256/4096,SCRAM-SHA-512/8192" || described[u+"-mixed"] != errName(kerr.ResourceNotFound.Code) {
				t.Errorf("after the changes: %v (a user with an invalid change must keep its credentials)", described)
			}
			got = alterScram(t, c, v, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{
				deletion(u+"-ok", 1), deletion(u+"-missing", 2), deletion(u+"-ok", 3),
			}, nil)
			if got[u+"-ok"] != kerr.UnsupportedSaslMechanism.Code || got[u+"-missing"] != kerr.ResourceNotFound.Code {
				t.Errorf("deletions: %v", got)
			}
			got = alterScram(t, c, v, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion(u+"-ok", 1)},
				[]kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion(u+"-ok", 2, 4096, "new")})
			if got[u+"-ok"] != 0 {
				t.Errorf("delete one mechanism, replace the other: %v", got)
			}
			if d := describeScram(t, c, 0, u+"-ok"); d[u+"-ok"] != "SCRAM-SHA-512/4096" {
				t.Errorf("after deleting SCRAM-SHA-256: %v", d)
			}
		})
	}
}

// describeScram describes users at version v: each user's mechanisms and
// iterations (MECH/ITER,...), or its error's name.
func describeScram(t *testing.T, c *kconn, v int16, users ...string) map[string]string {
	t.Helper()
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	req.SetVersion(v)
	if users != nil {
		req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{}
	}
	for _, u := range users {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	resp := c.do(req).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	wantCode(t, "DescribeUserScramCredentials", resp.ErrorCode, 0)
	out := map[string]string{}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			out[r.User] = errName(r.ErrorCode)
			continue
		}
		var parts []string
		for _, ci := range r.CredentialInfos {
			parts = append(parts, fmt.Sprintf("%s/%d", map[int8]string{1: auth.ScramSHA256, 2: auth.ScramSHA512}[ci.Mechanism], ci.Iterations))
		}
		out[r.User] = strings.Join(parts, ",")
	}
	return out
}

// conformDescribeUserScramCredentials: named users, all users (null list), a
// user without credentials, a user named twice.
func conformDescribeUserScramCredentials(t *testing.T, c *kconn, versions []int16) {
	for _, v := range versions {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			u := topicName(t, "")
			if got := alterScram(t, c, 0, nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsertion(u, 2, 4096, "pw")}); got[u] != 0 {
				t.Fatalf("create %s: %v", u, got)
			}
			got := describeScram(t, c, v, u, u+"-none", u+"-twice", u+"-twice")
			want := map[string]string{u: "SCRAM-SHA-512/4096", u + "-none": errName(kerr.ResourceNotFound.Code),
				u + "-twice": errName(kerr.DuplicateResource.Code)}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("described %v, want %v", got, want)
			}
			if all := describeScram(t, c, v); all[u] != "SCRAM-SHA-512/4096" {
				t.Errorf("all users: %v lacks %s", all, u)
			}
		})
	}
}
