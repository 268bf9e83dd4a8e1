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

func TestParseAddress(t *testing.T) {
	for in, want := range map[string]string{
		"h1": "http://h1:8080", " http://h1:9/ ": "http://h1:9", "https://[::1]": "https://[::1]:8080", "[::1]:7": "http://[::1]:7",
	} {
		scheme, addr, err := ParseAddress(in, "8080")
		if got := scheme + "://" + addr; err != nil || got != want {
			t.Errorf("ParseAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"": "--http is empty", "https://": "--http is empty", "h1:0": "want HOST:PORT", ":9": "want HOST:PORT", "h1:x": "want HOST:PORT"} {
		if _, _, err := ParseAddress(in, "8080"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAddress(%q): %v, want %q", in, err, want)
		}
	}
}
