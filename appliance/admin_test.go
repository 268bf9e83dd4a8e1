package appliance

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAdminAPI checks the admin API of a single node: the status, and the refusals of
// remove-node that need no other node (the multi-node cases run in e2e with real
// processes).
func TestAdminAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := Start(ctx, Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", EtcdClient: "127.0.0.1:0", EtcdPeer: "127.0.0.1:0",
		HTTP: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	}()
	base := "http://" + n.HTTPAddr()

	resp, err := http.Get(base + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var st ClusterStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !st.Quorum || st.NodeID != n.ID() || st.ControllerID != n.ID() || st.ClusterID == "" {
		t.Fatalf("status %d: %+v", resp.StatusCode, st)
	}
	if len(st.Members) != 1 || !st.Members[0].Healthy || !st.Members[0].Leader || st.Members[0].NodeID != n.ID() || st.Members[0].Name != "skiff-1" {
		t.Errorf("members %+v", st.Members)
	}
	if len(st.Brokers) != 1 || !st.Brokers[0].Live || st.Brokers[0].Port == 0 {
		t.Errorf("brokers %+v", st.Brokers)
	}
	if st.OfflinePartitions == nil || st.UnderReplicatedPartitions == nil {
		t.Error("partition lists are null, want []")
	}

	for _, tc := range []struct {
		method, query string
		status        int
		want          string
	}{
		{"POST", "id=x", http.StatusBadRequest, "want a node id"},
		{"POST", "", http.StatusBadRequest, "want a node id"},
		{"POST", "id=7", http.StatusNotFound, "there is no node 7 in this cluster"},
		{"POST", "id=7&drain=true", http.StatusNotFound, "there is no node 7 in this cluster"},
		{"POST", "id=7&drain=maybe", http.StatusBadRequest, "want true or false"},
		{"POST", "id=1", http.StatusConflict, "node 1 is the node answering this request"},
		{"GET", "id=7", http.StatusMethodNotAllowed, ""},
	} {
		req, _ := http.NewRequest(tc.method, base+"/v1/cluster/remove-node?"+tc.query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s remove-node?%s: %d %s, want %d with %q", tc.method, tc.query, resp.StatusCode, body, tc.status, tc.want)
		}
	}
}
