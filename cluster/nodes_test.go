package cluster

import (
	"testing"
	"time"
)

func TestNodeRecords(t *testing.T) {
	m := startMember(t, "")
	ctx := testCtx(t)
	s := New(m.Client(), quiet)
	for _, n := range []NodeMember{
		{NodeID: 3, MemberName: "skiff-3", MemberID: 0xfeedface12345678},
		{NodeID: 1, MemberName: "skiff-1", MemberID: 0x8e9e05c52164694d},
		{NodeID: 1, MemberName: "skiff-1", MemberID: 0x8e9e05c52164694d},
	} {
		if err := s.RecordNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, serializable := range []bool{false, true} {
		got, err := s.Nodes(ctx, serializable)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].NodeID != 1 || got[1] != (NodeMember{NodeID: 3, MemberName: "skiff-3", MemberID: 0xfeedface12345678}) {
			t.Fatalf("nodes %+v", got)
		}
	}
	resp, err := m.Client().Get(ctx, nodeKey(3))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":1,"id":3,"member_name":"skiff-3","member_id":"feedface12345678"}`; string(resp.Kvs[0].Value) != want {
		t.Errorf("stored %s, want %s", resp.Kvs[0].Value, want)
	}
	if resp.Kvs[0].Version != 1 {
		t.Errorf("written %d times; an unchanged record must not be written again", resp.Kvs[0].Version)
	}

	// ForgetNode deletes the record and ends the broker's session at once.
	sess, err := s.RegisterBroker(ctx, Broker{ID: 3, Host: "h", Port: 9092}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := s.ForgetNode(ctx, 3); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sess.Done():
	case <-ctx.Done():
		t.Fatal("the broker session of a forgotten node is still alive")
	}
	if n := countKeys(t, m.Client(), brokerKey(3)); n != 0 {
		t.Errorf("broker key of a forgotten node still there")
	}
	if got, _ := s.Nodes(ctx, false); len(got) != 1 || got[0].NodeID != 1 {
		t.Errorf("nodes after ForgetNode(3): %+v", got)
	}
	if err := s.ForgetNode(ctx, 3); err != nil {
		t.Errorf("forgetting twice: %v", err)
	}
}
