package cluster

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff/auth"
)

func hashOf(secret string) []byte { h := sha256.Sum256([]byte(secret)); return h[:] }

func matching(secret string) func([]byte) bool {
	return func(hash []byte) bool { return bytes.Equal(hash, hashOf(secret)) }
}

// TestJoinTokens: a token admits exactly one of many concurrent joiners; a wrong
// secret, an unknown id, a used and an expired token are refused with their own
// error; records expired for more than a day are deleted.
func TestJoinTokens(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	now := time.Now()
	tok := JoinToken{ID: "00112233aabbccdd", SecretHash: hashOf("secret"), Created: now, Expires: now.Add(time.Hour), CreatedBy: 1}
	if err := s.CreateJoinToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJoinToken(ctx, tok); err == nil {
		t.Fatal("a token id was stored twice")
	}
	if _, err := s.ConsumeJoinToken(ctx, tok.ID, matching("guess"), now, "x"); !errors.Is(err, ErrJoinTokenWrong) {
		t.Errorf("wrong secret: %v", err)
	}
	if _, err := s.ConsumeJoinToken(ctx, "ffffffffffffffff", matching("secret"), now, "x"); !errors.Is(err, ErrJoinTokenWrong) {
		t.Errorf("unknown id: %v", err)
	}

	// Eight joiners at once, each on its own client: one wins.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		c := newClient(t, m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = New(c, quiet).ConsumeJoinToken(ctx, tok.ID, matching("secret"), now, fmt.Sprintf("joiner-%d", i))
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrJoinTokenUsed):
			t.Errorf("a losing joiner: %v, want ErrJoinTokenUsed", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d joiners used one token, want 1", won)
	}
	if _, err := s.ConsumeJoinToken(ctx, tok.ID, matching("secret"), now, "late"); !errors.Is(err, ErrJoinTokenUsed) {
		t.Errorf("used token: %v", err)
	}
	// Used and wrong: the secret is checked first, so nothing is told about it.
	if _, err := s.ConsumeJoinToken(ctx, tok.ID, matching("guess"), now, "x"); !errors.Is(err, ErrJoinTokenWrong) {
		t.Errorf("used token, wrong secret: %v", err)
	}

	old := JoinToken{ID: "0000000000000001", SecretHash: hashOf("old"), Created: now.Add(-2 * time.Hour), Expires: now.Add(-time.Hour)}
	if err := s.CreateJoinToken(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConsumeJoinToken(ctx, old.ID, matching("old"), now, "x"); !errors.Is(err, ErrJoinTokenExpired) {
		t.Errorf("expired token: %v", err)
	}
	// A day and more later, making a token deletes the expired records (the
	// used token expired then too).
	later := JoinToken{ID: "0000000000000002", SecretHash: hashOf("new"), Created: now.Add(26 * time.Hour), Expires: now.Add(27 * time.Hour)}
	if err := s.CreateJoinToken(ctx, later); err != nil {
		t.Fatal(err)
	}
	resp, err := m.Client().Get(ctx, prefixJoinTokens, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	if want := []string{joinTokenKey(later.ID)}; !slices.Equal(keys, want) {
		t.Errorf("token records after cleanup: %v, want only the new one", keys)
	}
}

// TestFormSecure: the cluster is marked secure with its users once; a second
// call changes nothing.
func TestFormSecure(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	if fp, err := s.SecureCA(ctx); err != nil || fp != "" {
		t.Fatalf("SecureCA of a new cluster: %q %v", fp, err)
	}
	cred, err := auth.ScramCredentialFromPassword(auth.ScramSHA512, "pw", auth.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.FormSecure(ctx, "fp-1", time.Now(), []SecureUser{{Name: "admin", Scram: []auth.ScramCredential{cred}}})
	if err != nil || !first {
		t.Fatalf("first FormSecure: %v %v", first, err)
	}
	again, err := s.FormSecure(ctx, "fp-2", time.Now(), []SecureUser{{Name: "other", Scram: []auth.ScramCredential{cred}}})
	if err != nil || again {
		t.Fatalf("second FormSecure: %v %v", again, err)
	}
	if fp, err := s.SecureCA(ctx); err != nil || fp != "fp-1" {
		t.Errorf("SecureCA: %q %v", fp, err)
	}
	if _, ok, _ := s.ScramCredential(ctx, "admin", auth.ScramSHA512); !ok {
		t.Error("admin was not created")
	}
	if _, ok, _ := s.ScramCredential(ctx, "other", auth.ScramSHA512); ok {
		t.Error("the second FormSecure created a user")
	}
}
