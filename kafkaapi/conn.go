package kafkaapi

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/auth"
	"skiff/sharegroup"
)

// errRefused: the connection is closed for a refusal that has been logged already.
var errRefused = errors.New("kafkaapi: request refused")

// responseBufSize is the buffer a response starts in; it grows as needed.
const responseBufSize = 4 << 10

// conn is one client connection. Its loop reads a frame, handles it and writes the
// answer before reading the next, so responses are in request order; a Produce
// waiting for its acknowledgement answers from a goroutine, still in order
// (pipeline.go).
type conn struct {
	srv      *Server
	listener *Listener
	// nc is the connection: a *tls.Conn on TLS listeners once the handshake is
	// done (set under mu, read by other goroutines through netConn).
	nc     net.Conn
	host   string     // remote IP address: the key of per-address limits and refusal logs
	addr   netip.Addr // the same address, as the authorizer compares it with ACL hosts
	logger *slog.Logger
	ctx    context.Context

	// principal is who the client is: auth.Anonymous until a client certificate
	// or SASL says otherwise. Only the connection's loop uses it.
	principal auth.Principal
	// api is the name of the key being handled, for authorization logs and metrics.
	api string

	// The request in hand: its frame buffer (borrowed from the pool) and the bytes it
	// holds of the server's budget. Both are returned by releaseFrame.
	frame []byte
	held  int64

	fw *FrameWriter // Fetch responses

	// acks holds the answers of Produce requests waiting for their
	// acknowledgement while the loop reads on (pipeline.go); ackWait is the
	// wait the Produce handler in hand left to do (nil: none).
	acks    ackPipe
	ackWait func(context.Context)

	sasl saslState // SASL listeners: the client's authentication
	// shareID names the connection to share sessions; shared is set once a share
	// request came on it (its close then ends their sessions). Only the
	// connection's loop uses them.
	shareID sharegroup.ConnID
	shared  bool
	// closeAfterResponse: the handler's answer is the last; the connection is
	// closed once it is written (a failed or refused authentication).
	closeAfterResponse bool

	// The quota accounting of the request in hand (throttle.go): the time its
	// handler waited on others, the throttle of its byte quota, and how long
	// the connection is muted once it is answered and its frame released;
	// and when its handling began.
	waited, throttle, muted time.Duration
	started                 time.Time

	mu      sync.Mutex
	stopped bool // guarded by mu: no further request is read; nc is replaced under mu too
}

func newConn(s *Server, nc net.Conn, l *Listener) *conn {
	return &conn{
		srv:      s,
		listener: l,
		nc:       nc,
		host:     hostOf(nc.RemoteAddr()),
		addr:     addrOf(nc.RemoteAddr()),
		logger:   s.logger.With("remote", nc.RemoteAddr().String(), "listener", l.Name),
		ctx:      s.ctx,
		shareID:  sharegroup.ConnID(s.connIDs.Add(1)),
		// Anonymous until a client certificate or SASL says otherwise.
		principal: auth.Anonymous,
	}
}

// netConn is the connection (the TLS connection once its handshake is done).
func (c *conn) netConn() net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nc
}

// stopReading makes the loop end after the request in hand (if any) is answered.
func (c *conn) stopReading() {
	c.mu.Lock()
	c.stopped = true
	c.nc.SetReadDeadline(time.Now())
	c.mu.Unlock()
}

// stopping reports whether stopReading was called.
func (c *conn) stopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// armRead sets the deadline of the next reads to now+d unless the connection is
// stopping.
func (c *conn) armRead(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	c.nc.SetReadDeadline(time.Now().Add(d))
	return true
}

func (c *conn) serve() {
	defer func() { c.netConn().Close() }()
	defer func() {
		if c.shared {
			c.srv.cfg.Shares.ConnClosed(c.shareID)
		}
	}()
	defer c.releaseFrame()
	c.srv.metrics.connections.Inc()
	defer c.srv.metrics.connections.Dec()
	if c.listener.Protocol.TLS() && !c.handshakeTLS() {
		return
	}
	c.acks.init(c.ctx)
	owed := false // the answers in flight are written even as the loop ends
	defer func() { c.endAcks(owed) }()
	for {
		frame, err := c.readFrame()
		if err != nil {
			// A refused request or a shutdown still owes the answers in flight.
			owed = errors.Is(err, errRefused) || c.stopping()
			return
		}
		err = c.handle(frame)
		if err == nil && c.sasl.raw {
			c.releaseFrame()
			err = c.rawSASL()
		}
		if err != nil {
			owed = errors.Is(err, errRefused)
			if !owed {
				c.logger.Warn("closing connection", "err", err)
			}
			return
		}
		c.releaseFrame()
		c.mute() // after the frame went back: a muted client holds no request memory
	}
}

// readFrame reads the next request frame into a buffer borrowed from the pool, after
// taking the memory the request may need from the server's budget. Between frames the
// connection may be silent for IdleTimeout; from the first byte of a frame, all of it
// must arrive within ReadTimeout (or IdleTimeout if shorter). Any error has been
// logged and closes the connection.
func (c *conn) readFrame() ([]byte, error) {
	cfg := &c.srv.cfg
	if !c.armRead(cfg.IdleTimeout) {
		return nil, errRefused
	}
	// The size prefix and the API key: the key tells how much memory the request
	// may take. A frame of fewer than 2 bytes is refused before its key is needed.
	var head [6]byte
	n, err := c.nc.Read(head[:])
	if err != nil {
		c.logReadErr("read frame size", err, false)
		return nil, err
	}
	frameTimeout := min(cfg.ReadTimeout, cfg.IdleTimeout)
	if !c.armRead(frameTimeout) {
		return nil, errRefused
	}
	if n < 4 {
		if _, err := io.ReadFull(c.nc, head[n:4]); err != nil {
			c.logReadErr("read frame size", err, true)
			return nil, err
		}
		n = 4
	}
	if !c.listener.Protocol.TLS() && looksLikeTLS(head[:n]) {
		c.refuse("tls_on_plaintext", "closing connection: a TLS client on a listener without TLS (is its security.protocol SSL or SASL_SSL?)")
		return nil, errRefused
	}
	size := int32(binary.BigEndian.Uint32(head[:]))
	if limit := c.frameLimit(); size < 10 || size > limit {
		c.refuse("request_size", "closing connection: request frame size out of range (socket-request-max-bytes; 64 KiB before SASL authentication)",
			"size", size, "max", limit)
		return nil, errRefused
	}
	if n < 6 {
		if _, err := io.ReadFull(c.nc, head[n:6]); err != nil {
			c.logReadErr("read frame", err, true)
			return nil, err
		}
	}
	key := int16(binary.BigEndian.Uint16(head[4:]))
	weight := requestWeight(key, size)
	if limit := cfg.QueuedMaxRequestBytes; weight > limit {
		c.refuse("request_memory", "closing connection: the request could take more memory to decode than queued-max-request-bytes",
			"api_key", key, "size", size, "memory", weight, "queued_max_request_bytes", limit)
		return nil, errRefused
	}
	if err := c.srv.budget.acquire(c.ctx, weight); err != nil {
		return nil, err // shutting down
	}
	c.held = weight
	frame := getBuf(int(size))
	c.frame = frame
	copy(frame, head[4:6])
	// Time spent waiting for the budget is not the client's.
	if !c.armRead(frameTimeout) {
		return nil, errRefused
	}
	if _, err := io.ReadFull(c.nc, frame[2:]); err != nil {
		c.logReadErr("read frame", err, true)
		return nil, err
	}
	return frame, nil
}

// releaseFrame returns the request's frame to the pool and its memory to the budget;
// nothing may use the frame afterwards (record bytes and member metadata alias it).
// Handlers that wait after they are done with the frame (Produce with acks=all) call
// it early. It is idempotent.
func (c *conn) releaseFrame() {
	if c.frame != nil {
		putBuf(c.frame)
		c.frame = nil
	}
	c.srv.budget.release(c.held)
	c.held = 0
}

// refuse logs a refusal of this client (once per address and reason within a
// window, see refusalLog) and counts it.
func (c *conn) refuse(reason, msg string, args ...any) {
	c.srv.metrics.requestErrors.WithLabelValues(reason).Inc()
	c.srv.refusals.refuse(reason, c.host, msg, append(args, "remote", c.nc.RemoteAddr().String(), "listener", c.listener.Name)...)
}

func (c *conn) logReadErr(what string, err error, midFrame bool) {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded) && c.srv.closing():
	case errors.As(err, &ne) && ne.Timeout() && midFrame:
		c.refuse("read_timeout", "closing connection: request frame not received in time (socket-read-timeout)",
			"socket_read_timeout", min(c.srv.cfg.ReadTimeout, c.srv.cfg.IdleTimeout))
	case errors.As(err, &ne) && ne.Timeout():
		c.logger.Info("closing idle connection", "idle_timeout", c.srv.cfg.IdleTimeout)
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.logger.Info("client closed the connection in the middle of a request")
	default:
		c.logger.Info("connection read failed", "op", what, "err", err)
	}
}

// handle decodes one request frame, runs its handler and writes the answer. An error
// means the connection must be closed (the stream cannot be trusted any more).
func (c *conn) handle(frame []byte) error {
	d, err := decodeFrameWith(frame, c.srv.cfg.MaxPartitionsPerRequest, c.srv.cfg.TxnV2)
	if mustDrain(d, c.acks.adds) && !c.acks.drain() {
		return errRefused // an answer in flight could not be written (logged)
	}
	switch {
	case errors.Is(err, errTooManyPartitions):
		c.refuse("too_many_partitions", "closing connection: request names too many partitions (max-partitions-per-request)",
			"client_id", d.hdr.ClientID, "err", err)
		return errRefused
	case err != nil:
		c.refuse("malformed_request", "closing connection: malformed request",
			"client_id", d.hdr.ClientID, "err", err)
		return errRefused
	case d.req == nil:
		if a := lookup(d.hdr.Key); a == nil || !a.beforeAuth {
			// Not even answered before SASL authentication.
			if err := c.admitSASL(&apiKey{key: d.hdr.Key, name: kmsg.NameForKey(d.hdr.Key)}); err != nil {
				return err
			}
		}
		c.srv.metrics.requestErrors.WithLabelValues("unsupported").Inc()
		return c.writeUnsupported(d.hdr)
	}
	// Decoded: the request now holds its frame and its decoded entries, usually far
	// less than it could have taken to decode.
	keep := heldWeight(int32(len(frame)), d.entries, c.held)
	c.srv.budget.release(c.held - keep)
	c.held = keep

	hdr, a := d.hdr, d.api
	if err := c.admitSASL(a); err != nil {
		return err
	}
	c.srv.metrics.requests.WithLabelValues(a.name).Inc()
	c.api = a.name
	c.started = time.Now()
	if a.write != nil {
		// The key writes its own answer (Fetch: zero copy) with its throttle
		// (requestThrottle), and sets c.muted.
		return a.write(c.srv, c, &hdr, d.req)
	}
	resp := a.handle(c.srv, c, &hdr, d.req)
	wait := c.ackWait
	c.ackWait = nil
	th := c.requestThrottle(&hdr) // before the wait: the wait is not the handler's time
	if wait != nil {
		if th == 0 {
			c.deferAnswer(hdr, resp, wait)
			return nil
		}
		wait(c.ctx) // a throttled client is answered inline, and muted after the answer
	}
	if !c.acks.drain() {
		return errRefused // an answer in flight could not be written (logged)
	}
	if resp != nil { // nil: acks=0 produce, no answer at all
		setThrottle(resp, th)
		if err := c.writeResponse(&hdr, resp); err != nil {
			return err
		}
	}
	if c.closeAfterResponse {
		return errRefused // the handler has logged why
	}
	c.muted = th
	return nil
}

// writeResponse writes resp as the answer to the request with header hdr.
func (c *conn) writeResponse(hdr *RequestHeader, resp kmsg.Response) error {
	b := AppendResponse(getBuf(responseBufSize)[:0], hdr, resp)
	err := c.write(b)
	putBuf(b)
	return err
}

// AppendResponse appends resp's frame to dst: size, correlation id, the header's
// tagged fields for flexible responses (except for keys whose response header has
// none: ApiVersions), then the body.
func AppendResponse(dst []byte, hdr *RequestHeader, resp kmsg.Response) []byte {
	start := len(dst)
	b := append(dst, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(hdr.CorrelationID))
	if a := lookup(hdr.Key); resp.IsFlexible() && (a == nil || !a.plainResponseHeader) {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

func (c *conn) write(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
	if _, err := c.nc.Write(b); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
}

// writeUnsupported answers a key or version outside the advertised profile with
// UNSUPPORTED_VERSION. A served key may have its own answer (ApiVersions: its v0
// body with the supported ranges, so the client can retry at a version it knows);
// any other request gets a body holding only the error code, since there is no
// schema to encode it in.
func (c *conn) writeUnsupported(hdr RequestHeader) error {
	c.logger.Debug("unsupported API version", "api_key", hdr.Key, "api_version", hdr.Version)
	if a := lookup(hdr.Key); a != nil && a.unsupported != nil {
		return c.writeResponse(&hdr, a.unsupported(c.srv.cfg.TxnV2))
	}
	var b [10]byte
	binary.BigEndian.PutUint32(b[0:], 6)
	binary.BigEndian.PutUint32(b[4:], uint32(hdr.CorrelationID))
	binary.BigEndian.PutUint16(b[8:], uint16(kerr.UnsupportedVersion.Code))
	return c.write(b[:])
}

// fetchWriter returns the connection's Fetch frame writer.
func (c *conn) fetchWriter() *FrameWriter {
	if c.fw == nil {
		c.fw = &FrameWriter{}
	}
	return c.fw
}
