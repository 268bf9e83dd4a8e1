package client

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
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
