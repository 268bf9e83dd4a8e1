package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readLines returns every line lineReader yields, copied.
func readLines(t *testing.T, r io.Reader) [][]byte {
	t.Helper()
	lr := newLineReader(r)
	var lines [][]byte
	for {
		l, err := lr.next()
		if err == io.EOF {
			return lines
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		lines = append(lines, bytes.Clone(l))
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 1<<20+17) // several times the reader's buffer
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"empty input", "", nil},
		{"one newline", "\n", []string{""}},
		{"plain", "a\nb\n", []string{"a", "b"}},
		{"no final newline", "a\nb", []string{"a", "b"}},
		{"empty lines kept", "a\n\n\nb\n", []string{"a", "", "", "b"}},
		{"carriage return kept", "a\r\nb\r\n", []string{"a\r", "b\r"}},
		{"binary", "\x00\xff\xfe\n", []string{"\x00\xff\xfe"}},
		{"long lines", long + "\nshort\n" + long, []string{long, "short", long}},
	} {
		got := readLines(t, strings.NewReader(tc.in))
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d lines; want %d", tc.name, len(got), len(tc.want))
			continue
		}
		for i := range got {
			if string(got[i]) != tc.want[i] {
				t.Errorf("%s: line %d = %.40q (len %d); want %.40q (len %d)", tc.name, i, got[i], len(got[i]), tc.want[i], len(tc.want[i]))
			}
		}
		// A reader returning one byte at a time must give the same lines.
		one := readLines(t, iotest.OneByteReader(strings.NewReader(tc.in)))
		if len(one) != len(got) {
			t.Errorf("%s: one-byte reader gave %d lines; want %d", tc.name, len(one), len(got))
		}
	}
}

func TestLineReaderError(t *testing.T) {
	boom := errors.New("boom")
	lr := newLineReader(io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom)))
	if l, err := lr.next(); err != nil || string(l) != "a" {
		t.Fatalf("first line = %q, %v", l, err)
	}
	if _, err := lr.next(); !errors.Is(err, boom) {
		t.Fatalf("second line: err = %v; want %v", err, boom)
	}
}

func TestSplitKey(t *testing.T) {
	for _, tc := range []struct {
		line, sep  string
		key, value []byte // nil key: null
	}{
		{"k:v", ":", []byte("k"), []byte("v")},
		{"k:v:w", ":", []byte("k"), []byte("v:w")},
		{"no separator", ":", nil, []byte("no separator")},
		{":v", ":", []byte{}, []byte("v")},
		{"k:", ":", []byte("k"), []byte{}},
		{"k::v", "::", []byte("k"), []byte("v")},
		{"k:v", "", nil, []byte("k:v")},
	} {
		var sep []byte
		if tc.sep != "" {
			sep = []byte(tc.sep)
		}
		k, v := splitKey([]byte(tc.line), sep)
		if (k == nil) != (tc.key == nil) || !bytes.Equal(k, tc.key) || v == nil || !bytes.Equal(v, tc.value) {
			t.Errorf("splitKey(%q, %q) = %q (nil %v), %q; want %q (nil %v), %q",
				tc.line, tc.sep, k, k == nil, v, tc.key, tc.key == nil, tc.value)
		}
	}
}

func TestSlab(t *testing.T) {
	var s slab
	if e := s.copy(nil); e == nil || len(e) != 0 {
		t.Fatalf("empty line copied to %v (nil %v); want empty, not nil", e, e == nil)
	}
	a := s.copy([]byte("abc"))
	b := s.copy([]byte("de"))
	b = append(b, 'X') // must not overwrite anything after b
	c := s.copy([]byte("fg"))
	if string(a) != "abc" || string(c) != "fg" || string(b) != "deX" {
		t.Fatalf("slab copies changed: %q %q %q", a, b, c)
	}
	big := bytes.Repeat([]byte("y"), slabMaxLine+1)
	if got := s.copy(big); !bytes.Equal(got, big) {
		t.Fatal("long line copied wrongly")
	}
	// Filling a slab starts a new one without touching earlier copies.
	for range 2 * slabSize / 1000 {
		s.copy(bytes.Repeat([]byte("z"), 1000))
	}
	if string(a) != "abc" {
		t.Fatalf("copy changed after slab refill: %q", a)
	}
}

func TestParseAcksAndCompression(t *testing.T) {
	for _, s := range []string{"all", "-1", "1", "leader", "0", "none", "ALL"} {
		if _, _, err := parseAcks(s); err != nil {
			t.Errorf("parseAcks(%q): %v", s, err)
		}
	}
	if _, idem, _ := parseAcks("all"); !idem {
		t.Error("acks=all should keep idempotent writes")
	}
	if _, idem, _ := parseAcks("1"); idem {
		t.Error("acks=1 must disable idempotent writes")
	}
	if _, _, err := parseAcks("2"); err == nil {
		t.Error("parseAcks(2) succeeded")
	}
	for _, s := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if _, err := parseCompression(s); err != nil {
			t.Errorf("parseCompression(%q): %v", s, err)
		}
	}
	if _, err := parseCompression("brotli"); err == nil {
		t.Error("parseCompression(brotli) succeeded")
	}
}

// TestProduceFlagErrors checks that bad flags are refused before any
// connection is attempted (the broker address is unroutable).
func TestProduceFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce"}, "missing --topic"},
		{[]string{"produce", "-t", "x", "--acks", "2"}, "invalid --acks"},
		{[]string{"produce", "-t", "x", "--compression", "brotli"}, "invalid --compression"},
		{[]string{"produce", "-t", "x", "--key-separator", ""}, "--key-separator must not be empty"},
		{[]string{"produce", "-t", "x", "--delivery-timeout", "0s"}, "--delivery-timeout must be at least 1s"},
		{[]string{"produce", "-t", "x", "file.txt"}, `unexpected argument "file.txt"`},
		{[]string{"produce", "-t", "x", "--file", "/nonexistent/in.txt"}, "open input: open /nonexistent/in.txt"},
	} {
		_, _, err := runApp(nil, append(tc.args, "-b", "192.0.2.1:9")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v; want it to contain %q", tc.args, err, tc.want)
		}
	}
}

// TestProduceLinesCountsFailures produces to an address where nothing
// listens: every record must be counted as failed, none as acknowledged, and
// an input error after the third line must be reported with the stats.
func TestProduceLinesCountsFailures(t *testing.T) {
	addr := closedAddr(t)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic("t"),
		kgo.RecordDeliveryTimeout(time.Second),
		kgo.DialTimeout(time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boom := errors.New("boom")
	in := io.MultiReader(strings.NewReader("a\nb\nc\n"), iotest.ErrReader(boom))
	st, err := produceLines(ctx, cl, in, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "read input after 3 lines") {
		t.Fatalf("produceLines: err = %v; want the input error after 3 lines", err)
	}
	if st.records != 3 || st.failed != 3 || st.acked != 0 || st.firstErr == nil {
		t.Fatalf("stats = %+v; want 3 records, 3 failed, 0 acked and a first error", st)
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
