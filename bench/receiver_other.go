//go:build !linux

package bench

import (
	"net"
	"os"
)

// spliceReceive is Linux's splice(2); nil elsewhere, where the row is left out.
var spliceReceive func(net.Conn, *os.File) (int64, error)
