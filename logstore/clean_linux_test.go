package logstore_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRewriteSendfileBeforeSwap: a Fetch that took its file ranges before a
// swap sends them with sendfile(2) after it, from the descriptors the Slice
// holds (the replaced files are unlinked by then): the bytes are the old ones,
// whole.
func TestRewriteSendfileBeforeSwap(t *testing.T) {
	_, s, old, _ := readBeforeRewrite(t, t.TempDir(), nil)

	out, err := os.CreateTemp(t.TempDir(), "sent")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for _, r := range s.Ranges {
		in := r.File.(interface{ Fd() uintptr })
		off := r.Pos
		for left := r.Len; left > 0; {
			n, err := unix.Sendfile(int(out.Fd()), int(in.Fd()), &off, int(left))
			if err != nil || n == 0 {
				t.Fatalf("sendfile of a range of segment %d: %d bytes, %v", r.BaseOffset, n, err)
			}
			left -= int64(n)
		}
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	sent, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sent, old) {
		t.Fatalf("sendfile after the swap sent %d bytes, want the %d taken before it", len(sent), len(old))
	}
}
