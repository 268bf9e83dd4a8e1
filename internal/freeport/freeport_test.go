package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Pick's ports bind, and lie below the kernel's ephemeral range when it has room.
func TestPick(t *testing.T) {
	lo := ephemeralLow()
	for range 20 {
		port, err := Pick("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if lo > lowFrom+1000 && (port < lowFrom || port >= lo) {
			t.Fatalf("port %d, want one in [%d, %d)", port, lowFrom, lo)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d does not bind: %v", port, err)
		}
		l.Close()
	}
}
