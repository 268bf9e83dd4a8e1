package appliance

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAdminAPI checks the admin API of a single node: the status, and the refusals of
// remove-node that need no other node (the multi-node cases run in e2e with real
// processes).
func TestAdminAPI(t *testing.T) {
	n := startLoopbackNode(t, Config{})
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
