package cluster

import (
	"errors"
	"reflect"
	"testing"

	"skiff/auth"
)

func TestScramCredentials(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	cred := func(mech string) auth.ScramCredential {
		c, err := auth.ScramCredentialFromPassword(mech, "pw-"+mech, auth.MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a256, a512, odd := cred(auth.ScramSHA256), cred(auth.ScramSHA512), cred(auth.ScramSHA256)
	if err := s.AlterScramCredentials(ctx, "alice", []auth.ScramCredential{a256, a512}, nil); err != nil {
		t.Fatal(err)
	}
	// A user name may hold slashes: the mechanism is the last path element.
	if err := s.AlterScramCredentials(ctx, "alice/x", []auth.ScramCredential{odd}, nil); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.ScramCredential(ctx, "alice", auth.ScramSHA512); err != nil || !ok || !reflect.DeepEqual(got, a512) {
		t.Fatalf("alice SCRAM-SHA-512: %+v %v %v", got, ok, err)
	}
	if _, ok, err := s.ScramCredential(ctx, "bob", auth.ScramSHA512); err != nil || ok {
		t.Fatalf("bob: %v %v", ok, err)
	}
	users, err := s.ScramUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []UserCredentials{{User: "alice", Scram: []auth.ScramCredential{a256, a512}}, {User: "alice/x", Scram: []auth.ScramCredential{odd}}}
	if !reflect.DeepEqual(users, want) {
		t.Fatalf("users %+v\nwant  %+v", users, want)
	}
	// A deletion of a credential that does not exist changes nothing.
	if err := s.AlterScramCredentials(ctx, "alice/x", nil, []string{auth.ScramSHA256, auth.ScramSHA512}); !errors.Is(err, ErrNoCredential) {
		t.Fatalf("delete a missing credential: %v", err)
	}
	if _, ok, _ := s.ScramCredential(ctx, "alice/x", auth.ScramSHA256); !ok {
		t.Fatal("a failed deletion deleted")
	}
	if err := s.AlterScramCredentials(ctx, "alice", nil, []string{auth.ScramSHA256}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.ScramCredential(ctx, "alice", auth.ScramSHA256); ok {
		t.Fatal("deleted credential still there")
	}
	resp, err := m.Client().Get(ctx, userKey("alice", auth.ScramSHA512))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := decodeScram(string(resp.Kvs[0].Key), resp.Kvs[0].Value); !ok || err != nil {
		t.Fatalf("stored value %s: %v", resp.Kvs[0].Value, err)
	}
}
