//go:build !linux

package kafkaapi

import (
	"io"
	"net"
)

// sendFile is only zero-copy on Linux; elsewhere the caller copies.
func sendFile(net.Conn, io.ReaderAt, int64, int64) (int64, bool, error) { return 0, false, nil }
