package main

import (
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skiff/appliance"
)

// adminServer serves canned answers of the admin API and records the requests.
func adminServer(t *testing.T, status appliance.ClusterStatus, remove func(w http.ResponseWriter, r *http.Request)) (addr string, requests *[]string) {
	t.Helper()
	var reqs []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster", func(w http.ResponseWriter, r *http.Request) {
		reqs = append(reqs, r.Method+" "+r.URL.String())
		json.NewEncoder(w).Encode(status)
	})
	mux.HandleFunc("POST /v1/cluster/remove-node", func(w http.ResponseWriter, r *http.Request) {
		reqs = append(reqs, r.Method+" "+r.URL.String())
		remove(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &reqs
}

func sampleStatus() appliance.ClusterStatus {
	return appliance.ClusterStatus{
		ClusterID: "MkU3OEVBNTcwNTJENDM2Qg", NodeID: 1, ControllerID: 2, Quorum: true,
		Members: []appliance.MemberStatus{
			{ID: "8e9e05c52164694d", Name: "skiff-1", NodeID: 1, PeerURLs: []string{"http://h1:9094"}, ClientURLs: []string{"http://h1:9093"}, Leader: true, Healthy: true},
			{ID: "91bc3c398fb3c146", Name: "skiff-2", NodeID: 2, PeerURLs: []string{"http://h2:9094"}, ClientURLs: []string{"http://h2:9093"}, Healthy: true},
			{ID: "fd422379fda50e48", Name: "skiff-3", NodeID: 3, PeerURLs: []string{"http://h3:9094"}, ClientURLs: []string{"http://h3:9093"}, Error: "no answer within 1s"},
		},
		Brokers: []appliance.BrokerStatus{
			{ID: 1, Host: "h1", Port: 9092, Rack: "r1", Live: true, Replicas: 4, Leaders: 4},
			{ID: 2, Host: "h2", Port: 9092, Live: true, Replicas: 4, Leaders: 4},
			{ID: 3, Replicas: 4},
		},
		Topics: 1, Partitions: 12,
		OfflinePartitions: []appliance.PartitionStatus{{Topic: "spread", Partition: 2, Leader: -1, Replicas: []int32{3}, ISR: []int32{3}}},
	}
}

func TestClusterStatusTable(t *testing.T) {
	addr, reqs := adminServer(t, sampleStatus(), nil)
	out := skiffOK(t, nil, "cluster", "status", "--http", addr)
	mustContain(t, "status", out,
		"cluster MkU3OEVBNTcwNTJENDM2Qg (answered by node 1)", "controller: node 2", "etcd quorum: yes",
		"etcd members: 3", "skiff-1", "leader", "http://h1:9094", "UNHEALTHY: no answer within 1s",
		"brokers: 2 live", "h1:9092", "r1", "DOWN (no session)",
		"12 partitions in 1 topic; 1 offline, 0 under-replicated", "offline partitions (no leader)", "spread", "[3]")
	if len(*reqs) != 1 || (*reqs)[0] != "GET /v1/cluster" {
		t.Errorf("requests %v", *reqs)
	}

	js := skiffOK(t, nil, "cluster", "status", "--json", "--http", "http://"+addr+"/")
	var back appliance.ClusterStatus
	if err := json.Unmarshal([]byte(js), &back); err != nil || back.ClusterID != "MkU3OEVBNTcwNTJENDM2Qg" || len(back.Members) != 3 {
		t.Errorf("--json printed %q (%v)", js, err)
	}
}

// Without quorum the status is printed and the command fails, saying why.
func TestClusterStatusNoQuorum(t *testing.T) {
	st := sampleStatus()
	st.Quorum, st.QuorumError = false, "embedetcd: linearizable read: context deadline exceeded"
	addr, _ := adminServer(t, st, nil)
	out, _, err := runApp(nil, "cluster", "status", "--http", addr)
	if err == nil {
		t.Fatal("no error without quorum")
	}
	mustContain(t, "output", out, "etcd quorum: NO (embedetcd: linearizable read", "skiff-2")
	mustContain(t, "error", err.Error(), "no quorum at node 1", "start the stopped nodes")
}

func TestClusterUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, args := range [][]string{{"cluster", "status", "--http", addr}, {"cluster", "remove-node", "4", "--http", addr}} {
		msg := skiffErr(t, nil, args...)
		mustContain(t, strings.Join(args, " "), msg, "no Skiff node answers at http://"+addr, "--http HOST:PORT")
	}
	t.Setenv("SKIFF_HTTP", addr)
	mustContain(t, "SKIFF_HTTP", skiffErr(t, nil, "cluster", "status"), "http://"+addr)
}

func TestClusterRemoveNode(t *testing.T) {
	addr, reqs := adminServer(t, sampleStatus(), func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("id") {
		case "3":
			json.NewEncoder(w).Encode(appliance.RemoveResult{NodeID: 3, Message: "removed node 3 (etcd member skiff-3) from the cluster"})
		default:
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(map[string]any{"error": "node 2 still holds replicas of 1 partitions: t/0; move or delete these partitions first", "partitions": []string{"t/0"}})
		}
	})
	out := skiffOK(t, nil, "cluster", "remove-node", "3", "--http", addr)
	mustContain(t, "output", out, "removed node 3")
	msg := skiffErr(t, nil, "cluster", "remove-node", "--http", addr, "--drain=false", "2")
	mustContain(t, "refusal", msg, "remove node 2: node 2 still holds replicas", "t/0", "move or delete these partitions first")
	// Draining is the default; --drain=false asks the node to refuse instead.
	if want := []string{"POST /v1/cluster/remove-node?id=3&drain=true", "POST /v1/cluster/remove-node?id=2"}; strings.Join(*reqs, ";") != strings.Join(want, ";") {
		t.Errorf("requests %v, want %v", *reqs, want)
	}
}

func TestClusterFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "remove-node"}, "usage: skiff cluster remove-node ID"},
		{[]string{"cluster", "remove-node", "x"}, `node id "x": want a whole number`},
		{[]string{"cluster", "remove-node", "1", "2"}, "usage: skiff cluster remove-node ID"},
		{[]string{"cluster", "status", "extra"}, `unexpected argument "extra"`},
		{[]string{"cluster", "status", "--http", "h:port"}, `--http "h:port": want HOST:PORT`},
		{[]string{"cluster", "status", "--http", ""}, "--http is empty"},
		{[]string{"cluster", "status", "--timeout", "0s"}, "--timeout must be positive"},
	} {
		mustContain(t, strings.Join(tc.args, " "), skiffErr(t, nil, tc.args...), tc.want)
	}
}

// remove-node --drain asks again while the node drains (202), printing each change of
// the count left, until the node is removed (200).
func TestClusterRemoveNodeDrain(t *testing.T) {
	answers := []appliance.RemoveResult{
		{NodeID: 4, Draining: true, ReplicasLeft: 3, Message: "draining node 4: 3 partition replicas left to move to other nodes"},
		{NodeID: 4, Draining: true, ReplicasLeft: 3, Message: "draining node 4: 3 partition replicas left to move to other nodes"},
		{NodeID: 4, Draining: true, ReplicasLeft: 1, Message: "draining node 4: 1 partition replica left to move to other nodes"},
		{NodeID: 4, Message: "removed node 4 (etcd member skiff-4) from the cluster"},
	}
	addr, reqs := adminServer(t, sampleStatus(), func(w http.ResponseWriter, r *http.Request) {
		a := answers[0]
		answers = answers[1:]
		if a.Draining {
			w.WriteHeader(http.StatusAccepted)
		}
		json.NewEncoder(w).Encode(a)
	})
	out := skiffOK(t, nil, "cluster", "remove-node", "4", "--drain", "--http", addr)
	want := "draining node 4: 3 partition replicas left to move to other nodes\n" +
		"draining node 4: 1 partition replica left to move to other nodes\n" +
		"removed node 4 (etcd member skiff-4) from the cluster\n"
	if out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if len(*reqs) != 4 || (*reqs)[0] != "POST /v1/cluster/remove-node?id=4&drain=true" {
		t.Errorf("requests %v", *reqs)
	}

	addr, _ = adminServer(t, sampleStatus(), func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		json.NewEncoder(w).Encode(appliance.RemoveResult{NodeID: 4, Draining: true, ReplicasLeft: 2, Message: "draining node 4"})
	})
	msg := skiffErr(t, nil, "cluster", "remove-node", "4", "--drain", "--drain-timeout", "0s", "--http", addr)
	mustContain(t, "drain timeout", msg, "node 4 is still draining after 0s (2 partition replicas left)", "run the command again")
}

// TestClusterAdminCredentials: skiff cluster sends the bearer token of
// --http-token-file, else of SKIFF_HTTP_TOKEN, and talks HTTPS with --tls-ca;
// the node's refusal and a certificate it cannot check are explained.
func TestClusterAdminCredentials(t *testing.T) {
	var gotAuth []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]string{"error": "this node's admin API needs credentials"})
			return
		}
		json.NewEncoder(w).Encode(sampleStatus())
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	addr := strings.TrimPrefix(plain.URL, "http://")

	mustContain(t, "error", skiffErr(t, nil, "cluster", "status", "--http", addr), "needs credentials")
	t.Setenv("SKIFF_HTTP_TOKEN", "tok-1")
	skiffOK(t, nil, "cluster", "status", "--http", addr)
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte("tok-2\n"), 0o600)
	mustContain(t, "error", skiffErr(t, nil, "cluster", "status", "--http", addr, "--http-token-file", file), "needs credentials")
	if want := []string{"", "Bearer tok-1", "Bearer tok-2"}; strings.Join(gotAuth, "|") != strings.Join(want, "|") {
		t.Errorf("Authorization headers %q, want %q", gotAuth, want)
	}

	secure := httptest.NewTLSServer(handler)
	defer secure.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw}), 0o600)
	saddr := strings.TrimPrefix(secure.URL, "https://")
	skiffOK(t, nil, "cluster", "status", "--http", saddr, "--tls-ca", caFile)
	skiffOK(t, nil, "cluster", "status", "--http", "https://"+saddr, "--tls-ca", caFile)
	mustContain(t, "error", skiffErr(t, nil, "cluster", "status", "--http", "https://"+saddr), "HTTPS to https://"+saddr+" failed", "--tls-ca")
	mustContain(t, "error", skiffErr(t, nil, "cluster", "status", "--http", saddr), "serves HTTPS", "--tls")
}
