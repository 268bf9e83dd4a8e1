package kafkaapi

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// findProtocolDoc returns $SKIFF_PROTOCOL_MD, or the repository's docs/PROTOCOL.md.
func findProtocolDoc() string {
	if p := os.Getenv("SKIFF_PROTOCOL_MD"); p != "" {
		return p
	}
	return filepath.Join("..", "docs", "PROTOCOL.md")
}

// DocRange is one row of PROTOCOL.md's table "Advertised ranges (the profile)".
type DocRange struct {
	Name     string
	Min, Max int16
}

var profileRow = regexp.MustCompile(`^\|\s*(\d+)\s*\|\s*(\w+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*$`)

// The headings of PROTOCOL.md's range tables: the profile, and the rows a
// node with transaction version 2 advertises instead.
const (
	profileHeading = "## Advertised ranges (the profile)"
	txnV2Heading   = "### With transaction version 2"
)

// readProfileTable reads the table "Advertised ranges (the profile)" of the
// PROTOCOL.md at path, by key.
func readProfileTable(t *testing.T, path string) map[int16]DocRange {
	return readRangeTable(t, path, profileHeading)
}

// readTxnV2Table reads the table "With transaction version 2" of the
// PROTOCOL.md at path, by key: the rows that replace the profile's on a node
// with Config.TxnV2.
func readTxnV2Table(t *testing.T, path string) map[int16]DocRange {
	return readRangeTable(t, path, txnV2Heading)
}

// readRangeTable reads the rows "| key | API | min | max |" that follow the
// line heading in the PROTOCOL.md at path, up to the next heading, by key.
func readRangeTable(t *testing.T, path, heading string) map[int16]DocRange {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := make(map[int16]DocRange)
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = strings.TrimSpace(line) == heading
			continue
		}
		m := profileRow.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		key, _ := strconv.Atoi(m[1])
		lo, _ := strconv.Atoi(m[3])
		hi, _ := strconv.Atoi(m[4])
		if _, dup := out[int16(key)]; dup {
			t.Fatalf("%s: key %d listed twice under %q", path, key, heading)
		}
		out[int16(key)] = DocRange{Name: m[2], Min: int16(lo), Max: int16(hi)}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAPITableMatchesProtocolDoc: the registered keys and versions are exactly
// those of PROTOCOL.md's profile table, under the same names, both ways.
func TestAPITableMatchesProtocolDoc(t *testing.T) {
	path := findProtocolDoc()
	doc := readProfileTable(t, path)
	if len(doc) == 0 {
		t.Fatalf("%s: no profile table found; did its format change?", path)
	}
	for key, d := range doc {
		a := lookup(key)
		switch {
		case a == nil:
			t.Errorf("key %d (%s) %d..%d is in %s but not registered", key, d.Name, d.Min, d.Max, path)
		case a.min != d.Min || a.max != d.Max:
			t.Errorf("key %d (%s): registered %d..%d, %s says %d..%d", key, d.Name, a.min, a.max, path, d.Min, d.Max)
		case !strings.EqualFold(a.name, d.Name):
			t.Errorf("key %d: %s names it %s, kmsg %s", key, path, d.Name, a.name)
		}
	}
	for _, a := range apis {
		if a == nil {
			continue
		}
		if _, ok := doc[a.key]; !ok {
			t.Errorf("key %d (%s) %d..%d is registered (%s) but not in %s", a.key, a.name, a.min, a.max, filepath.Base(a.file), path)
		}
	}
}

// TestAPITableTxnV2MatchesProtocolDoc: the keys that register versions of
// transaction version 2 (txnV2Max) are exactly those of PROTOCOL.md's table
// "With transaction version 2", with the same minimum and txnV2Max as maximum.
func TestAPITableTxnV2MatchesProtocolDoc(t *testing.T) {
	path := findProtocolDoc()
	doc := readTxnV2Table(t, path)
	if len(doc) == 0 {
		t.Fatalf("%s: no table under %q; did its format change?", path, txnV2Heading)
	}
	for key, d := range doc {
		a := lookup(key)
		switch {
		case a == nil:
			t.Errorf("key %d (%s) is in %s's transaction version 2 table but not registered", key, d.Name, path)
		case a.txnV2Max == 0:
			t.Errorf("key %d (%s) is in %s's transaction version 2 table but registers no txnV2Max", key, d.Name, path)
		case a.min != d.Min || a.txnV2Max != d.Max:
			t.Errorf("key %d (%s): registered %d..%d with transaction version 2, %s says %d..%d", key, d.Name, a.min, a.txnV2Max, path, d.Min, d.Max)
		case !strings.EqualFold(a.name, d.Name):
			t.Errorf("key %d: %s names it %s, kmsg %s", key, path, d.Name, a.name)
		}
	}
	for _, a := range apis {
		if a == nil || a.txnV2Max == 0 {
			continue
		}
		if _, ok := doc[a.key]; !ok {
			t.Errorf("key %d (%s) registers txnV2Max %d (%s) but is not in %s's transaction version 2 table", a.key, a.name, a.txnV2Max, filepath.Base(a.file), path)
		}
	}
}

// TestAPITable: every key is registered by its own file, named NN_name.go after
// its key; only the keys a client needs before it can authenticate are served
// before authentication; ApiVersions lists the table in key order.
func TestAPITable(t *testing.T) {
	beforeAuth := []int16{17, 18, 36} // SaslHandshake, ApiVersions, SaslAuthenticate
	var listed []int16
	for i, a := range apis {
		if a == nil {
			continue
		}
		listed = append(listed, a.key)
		if a.key != int16(i) {
			t.Errorf("entry %d holds key %d", i, a.key)
		}
		if prefix := fmt.Sprintf("%02d_", a.key); !strings.HasPrefix(filepath.Base(a.file), prefix) {
			t.Errorf("key %d (%s) is registered in %s, not in a file %s*.go", a.key, a.name, filepath.Base(a.file), prefix)
		}
		if a.beforeAuth && !slices.Contains(beforeAuth, a.key) {
			t.Errorf("key %d (%s) is served before authentication", a.key, a.name)
		}
	}
	if a := lookup(18); a == nil || !a.beforeAuth {
		t.Error("ApiVersions is not served before authentication")
	}
	var got []int16
	for _, k := range APIVersions() {
		got = append(got, k.ApiKey)
		if a := lookup(k.ApiKey); a == nil || a.min != k.MinVersion || a.max != k.MaxVersion {
			t.Errorf("ApiVersions lists key %d %d..%d, not the table's", k.ApiKey, k.MinVersion, k.MaxVersion)
		}
	}
	if !slices.Equal(got, listed) {
		t.Errorf("ApiVersions lists keys %v, the table %v", got, listed)
	}
}
