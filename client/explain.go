package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Explain turns a failed request into the message a person needs: which broker
// could not be reached and why, or that no broker answered in time. Other
// errors are returned unchanged.
func (k *Client) Explain(err error) error {
	if err == nil {
		return nil
	}
	timedOut := errors.Is(err, context.DeadlineExceeded)
	if !timedOut && !isConnError(err) {
		return err
	}
	if addr, node, derr := k.watch.last(); derr != nil {
		if node >= 0 {
			return fmt.Errorf("cannot reach broker %d at %s, the address the cluster advertises for it: %s; "+
				"check that broker's advertised address and that it is running", node, addr, ConnReason(derr))
		}
		return fmt.Errorf("cannot reach broker %s: %s; is `skiff serve` running? (set --brokers or SKIFF_BROKERS)",
			addr, ConnReason(derr))
	}
	if timedOut {
		return fmt.Errorf("no answer from %s within %v; is it a Kafka broker, and is it healthy? (raise --timeout to wait longer)",
			strings.Join(k.cfg.Brokers, ","), k.cfg.Timeout)
	}
	return fmt.Errorf("lost connection to %s: %w", strings.Join(k.cfg.Brokers, ","), err)
}

// LastDialError returns the latest failed connection attempt that no later
// success to the same address cleared: its address, the broker's node id
// (negative for a seed broker from Config.Brokers) and the error; err is nil if
// there is none.
func (k *Client) LastDialError() (addr string, node int32, err error) {
	return k.watch.last()
}

// isConnError reports whether err comes from the network rather than from a
// broker's answer.
func isConnError(err error) bool {
	var ne net.Error
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return false
	}
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// ConnReason is the innermost useful part of a connection error:
// "connection refused" rather than "dial tcp 127.0.0.1:9092: connect: connection refused".
func ConnReason(err error) string {
	var errno syscall.Errno
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return fmt.Sprintf("no such host %q", dns.Name)
		}
		return dns.Error()
	case errors.As(err, &errno):
		return errno.Error()
	case errors.As(err, &ne) && ne.Timeout():
		return "connection timed out"
	default:
		return err.Error()
	}
}

// dialWatch is a kgo.HookBrokerConnect that remembers the latest failed
// connection attempt (cleared by a later success to the same address).
type dialWatch struct {
	mu struct {
		sync.Mutex
		addr string
		node int32
		err  error
	}
}

var _ kgo.HookBrokerConnect = (*dialWatch)(nil)

func (w *dialWatch) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err != nil:
		w.mu.addr, w.mu.node, w.mu.err = addr, meta.NodeID, err
	case w.mu.addr == addr:
		w.mu.addr, w.mu.node, w.mu.err = "", 0, nil
	}
}

// last returns the latest failed connection: address, node id (negative for a
// seed broker) and error; err is nil if none failed.
func (w *dialWatch) last() (addr string, node int32, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.addr, w.mu.node, w.mu.err
}
