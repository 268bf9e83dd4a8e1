package main

import (
	"net"
	"testing"

	"skiff/bench"
)

// TestAPIVersions exchanges the connection test's ApiVersions with the null
// Kafka server (kafkaapi's decoder and ApiVersions answer), and fails on a
// listener that accepts and never answers.
func TestAPIVersions(t *testing.T) {
	s, err := bench.StartNullServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range int32(3) {
		c, err := apiVersions(s.Addr(), i+7)
		if err != nil {
			t.Fatalf("ApiVersions %d: %v", i, err)
		}
		c.Close()
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close() // says nothing
		}
	}()
	if c, err := apiVersions(ln.Addr().String(), 1); err == nil {
		c.Close()
		t.Fatal("no error from a server that closes without answering")
	}
}
