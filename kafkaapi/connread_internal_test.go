package kafkaapi

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestConnReadAhead: a plaintext connection takes several requests sent in one
// write from one read, a request cut in the middle waits for the rest, a frame
// larger than the buffer arrives whole, the buffer goes back to the pool once
// its bytes are taken (an idle connection holds none), and an end of stream in
// the middle of a read is io.ErrUnexpectedEOF.
func TestConnReadAhead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &conn{nc: nc, listener: &Listener{Protocol: Plaintext}}
	c.initReader()
	if c.rd.rc == nil {
		t.Fatal("a plaintext TCP connection has no read-ahead")
	}
	const d = 10 * time.Second
	read := func(n int) []byte {
		t.Helper()
		b := make([]byte, n)
		if err := c.readFull(b, d); err != nil {
			t.Fatalf("read %d bytes: %v", n, err)
		}
		return b
	}

	// Two whole pieces and the start of a third in one write.
	if _, err := client.Write([]byte("aaaabbbbbbcc")); err != nil {
		t.Fatal(err)
	}
	if got := read(4); string(got) != "aaaa" {
		t.Fatalf("first piece %q", got)
	}
	// The rest of the write is buffered: nothing more is read from the socket.
	if c.rd.buffered() != 8 {
		t.Fatalf("%d bytes buffered after the first piece, want 8", c.rd.buffered())
	}
	if got := read(6); string(got) != "bbbbbb" {
		t.Fatalf("second piece %q", got)
	}
	// The rest of the third piece comes while the read waits for it.
	time.AfterFunc(50*time.Millisecond, func() { client.Write([]byte("ccc")) })
	if got := read(5); string(got) != "ccccc" {
		t.Fatalf("third piece %q", got)
	}
	if c.rd.buf != nil {
		t.Fatal("the read-ahead buffer is held with nothing in it")
	}

	// A frame larger than the buffer, behind a small one.
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*readBufSize/16+5)
	go client.Write(append([]byte("xy"), big...))
	if got := read(2); string(got) != "xy" {
		t.Fatalf("small piece %q", got)
	}
	if got := read(len(big)); !bytes.Equal(got, big) {
		t.Fatal("the large piece came back different")
	}

	// One byte, then the end of the stream.
	if _, err := client.Write([]byte("z")); err != nil {
		t.Fatal(err)
	}
	client.Close()
	if err := c.readFull(make([]byte, 4), d); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("end of stream mid-read: %v, want io.ErrUnexpectedEOF", err)
	}
	if c.rd.buf != nil {
		t.Fatal("the read-ahead buffer is held after the end of the stream")
	}
}
