package nodeadmin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"skiff/appliance"
)

// TestRemoveNodeDrain: RemoveNode asks again while the node drains, prints
// each progress message once, and prints the final answer.
func TestRemoveNodeDrain(t *testing.T) {
	left := []int{2, 2, 1, 0}
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.URL.String(); got != "/v1/cluster/remove-node?id=4&drain=true" || r.Method != http.MethodPost {
			t.Errorf("request %s %s", r.Method, got)
		}
		n := left[min(calls, len(left)-1)]
		calls++
		if n == 0 {
			json.NewEncoder(w).Encode(appliance.RemoveResult{NodeID: 4, Message: "removed node 4"})
			return
		}
		w.WriteHeader(http.StatusAccepted)
		json.NewEncoder(w).Encode(appliance.RemoveResult{NodeID: 4, ReplicasLeft: n, Message: strings.Repeat("x", n) + " left"})
	}))
	defer srv.Close()
	a := New(Config{Base: srv.URL, Timeout: 5 * time.Second})
	var out bytes.Buffer
	if err := a.RemoveNode(context.Background(), &out, 4, true, time.Minute); err != nil {
		t.Fatal(err)
	}
	if want := "xx left\nx left\nremoved node 4\n"; out.String() != want || calls != 4 {
		t.Errorf("printed %q after %d requests, want %q after 4", out.String(), calls, want)
	}
}

func TestCheckQuorum(t *testing.T) {
	if err := CheckQuorum(appliance.ClusterStatus{Quorum: true}); err != nil {
		t.Errorf("with quorum: %v", err)
	}
	err := CheckQuorum(appliance.ClusterStatus{NodeID: 2, QuorumError: "timeout"})
	if err == nil || !strings.Contains(err.Error(), "no quorum at node 2 (timeout)") {
		t.Errorf("without quorum: %v", err)
	}
}
