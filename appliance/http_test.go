package appliance

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestProfilerSetting: /debug/pprof/ is served only with the pprof setting.
func TestProfilerSetting(t *testing.T) {
	for _, on := range []bool{false, true} {
		n := &Node{cfg: Config{Pprof: on}}
		srv := httptest.NewServer(n.httpHandler(prometheus.NewRegistry()))
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := http.StatusNotFound
			if on {
				want = http.StatusOK
			}
			if resp.StatusCode != want {
				t.Errorf("pprof %v: GET %s = %d, want %d", on, path, resp.StatusCode, want)
			}
		}
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/plain") {
			t.Errorf("pprof %v: /metrics = %d %q", on, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		resp.Body.Close()
		srv.Close()
	}
}
