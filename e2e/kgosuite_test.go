package e2e

// franz-go's own tests against a real `skiff serve` process, from franz-go's
// source in the module cache: its KIP-848 tests (Test848*, the "848" subtests of
// TestGroupSimple and TestGroupETL) and its share group tests (TestShareGroup*).
// The tests turn these features on themselves from ApiVersions (ConsumerGroupHeartbeat
// v1; ShareFetch and ShareAcknowledge v2), so a skip would mean Skiff did not offer
// them.

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/testnode"
)

// kgoRun848 selects the tests: TestPauseIssueOct2023 is a sequential test that
// calls adm() first, which sets allow848 before the parallel tests look at it.
const kgoRun848 = `^(TestPauseIssueOct2023|Test848.*|TestGroupSimple|TestGroupETL)$/^(848|range|sticky)$/^848$`

// kgoWant848 are the tests that must pass (and not skip).
var kgoWant848 = []string{
	"Test848RegexBrokerResolves", "TestGroupSimple/848",
	"TestGroupETL/range/848", "TestGroupETL/sticky/848", "TestGroupETL/sticky/848/static",
}

func TestKgoSuite848(t *testing.T) {
	n := testnode.Start(t, "--group-consumer-heartbeat-interval", "1s")
	runKgoSuite(t, n.Addr, kgoRun848, kgoWant848)
}

// kgoWantShare are franz-go's share group tests; each calls adm() before it
// looks at allowShare.
var kgoWantShare = []string{"TestShareGroup", "TestShareGroupETL", "TestShareGroupAckOnClose", "TestShareGroupOffsetsAdmin"}

func TestKgoSuiteShare(t *testing.T) {
	n := testnode.Start(t)
	runKgoSuite(t, n.Addr, `^TestShareGroup.*$`, kgoWantShare)
}

// runKgoSuite runs franz-go's kgo tests matching run against the node at addr;
// every test of want must pass, and none may skip.
func runKgoSuite(t *testing.T, addr, run string, want []string) {
	if testing.Short() {
		t.Skip("compiles and runs franz-go's tests (about two minutes)")
	}
	src := goOutput(t, "", "list", "-m", "-f", "{{.Dir}}", "github.com/twmb/franz-go")
	dir := filepath.Join(t.TempDir(), "franz-go")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	// The module cache is read-only; the tests' build writes nothing there, but
	// go test wants to be able to.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	waitGroupsLoaded(t, addr)
	cmd := exec.Command("go", "test", "-count=1", "-timeout", "10m", "-v", "-run", run, "./pkg/kgo")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "KGO_SEEDS="+addr, "KGO_TEST_RF=1",
		"KGO_TEST_RECORDS=50000", "KGO_LOG_LEVEL=none", "GOFLAGS=-mod=mod")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("franz-go's tests ran in %v", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("go test ./pkg/kgo: %v\n%s", err, tail(out, 200))
	}
	for _, name := range want {
		if !regexp.MustCompile(`(?m)^\s*--- PASS: ` + regexp.QuoteMeta(name) + ` `).Match(out) {
			t.Errorf("%s did not pass:\n%s", name, tail(out, 200))
		}
	}
	if bytes.Contains(out, []byte("--- SKIP")) {
		t.Errorf("some tests skipped:\n%s", tail(out, 200))
	}
}

// goOutput runs the go command in dir and returns its trimmed output.
func goOutput(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(string(out), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitGroupsLoaded creates __consumer_offsets (a FindCoordinator does) and waits
// until ListGroups no longer answers COORDINATOR_LOAD_IN_PROGRESS: every group
// partition is loaded. franz-go's tests start with a fresh cluster and some of
// their admin requests (AlterShareGroupOffsets) are not retried by the client on
// that code, which Kafka answers too while a just-created partition loads.
func waitGroupsLoaded(t *testing.T, addr string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey = "skiff-e2e-warm-up"            // v0-3
	find.CoordinatorKeys = []string{find.CoordinatorKey} // v4+
	for {
		code := int16(-1)
		// The coordinator is known once its partition exists and is led.
		if f, err := find.RequestWith(ctx, cl); err == nil && findCode(f) == 0 {
			if resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl); err == nil {
				code = resp.ErrorCode
			}
		}
		if code == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group partitions not loaded within a minute (last ListGroups code %v)", kerr.ErrorForCode(code))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func findCode(r *kmsg.FindCoordinatorResponse) int16 {
	if len(r.Coordinators) > 0 {
		return r.Coordinators[0].ErrorCode
	}
	return r.ErrorCode
}
