package kafkaapi

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn is one client connection. Its loop reads a frame, handles it and writes the
// answer before reading the next, so responses are in request order.
type conn struct {
	srv    *Server
	nc     net.Conn
	logger *slog.Logger
	ctx    context.Context

	rbuf []byte       // request frame, reused
	wbuf []byte       // response bytes, reused
	fw   *frameWriter // Fetch responses, reused

	mu      sync.Mutex
	stopped bool // guarded by mu: no further request is read
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{
		srv:    s,
		nc:     nc,
		logger: s.logger.With("remote", nc.RemoteAddr().String()),
		ctx:    s.ctx,
	}
}

// stopReading makes the loop end after the request in hand (if any) is answered.
func (c *conn) stopReading() {
	c.mu.Lock()
	c.stopped = true
	c.nc.SetReadDeadline(time.Now())
	c.mu.Unlock()
}

// armRead sets the deadline for the next read unless the connection is stopping.
func (c *conn) armRead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
	return true
}

func (c *conn) serve() {
	defer c.nc.Close()
	c.srv.metrics.connections.Inc()
	defer c.srv.metrics.connections.Dec()
	var sizeBuf [4]byte
	for {
		if !c.armRead() {
			return
		}
		if _, err := io.ReadFull(c.nc, sizeBuf[:]); err != nil {
			c.logReadErr("read frame size", err)
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 10 || size > c.srv.cfg.MaxRequestBytes {
			c.logger.Warn("closing connection: request frame size out of range",
				"size", size, "max", c.srv.cfg.MaxRequestBytes)
			return
		}
		if cap(c.rbuf) < int(size) {
			c.rbuf = make([]byte, size)
		}
		// The frame is handed to the handler and may be referenced by it (record
		// bytes), so a frame is only reused once the answer is written.
		frame := c.rbuf[:size]
		if _, err := io.ReadFull(c.nc, frame); err != nil {
			c.logReadErr("read frame", err)
			return
		}
		if err := c.handle(frame); err != nil {
			c.logger.Warn("closing connection", "err", err)
			return
		}
		// Do not keep a huge buffer alive for an idle connection.
		if cap(c.rbuf) > 1<<20 {
			c.rbuf = nil
		}
	}
}

func (c *conn) logReadErr(what string, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded) && c.srv.closing():
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
	hdr, body, err := parseHeaderPrefix(frame)
	if err != nil {
		return err
	}
	if !supported(hdr.key, hdr.version) {
		c.srv.metrics.requestErrors.WithLabelValues("unsupported").Inc()
		return c.writeUnsupported(hdr)
	}
	req := kmsg.RequestForKey(hdr.key)
	req.SetVersion(hdr.version)
	if req.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			return fmt.Errorf("%s v%d: %w", kmsg.NameForKey(hdr.key), hdr.version, err)
		}
	}
	if err := req.ReadFrom(body); err != nil {
		c.srv.metrics.requestErrors.WithLabelValues("decode").Inc()
		return fmt.Errorf("decode %s v%d: %w", kmsg.NameForKey(hdr.key), hdr.version, err)
	}
	c.srv.metrics.requests.WithLabelValues(kmsg.NameForKey(hdr.key)).Inc()
	if r, ok := req.(*kmsg.FetchRequest); ok {
		return c.srv.handleFetch(c, &hdr, r)
	}
	resp := c.srv.dispatch(c, &hdr, req)
	if resp == nil { // acks=0 produce: no answer at all
		return nil
	}
	return c.writeResponse(&hdr, resp)
}

// writeResponse frames resp: size, correlation id, the header's tagged fields for
// flexible responses (never for ApiVersions), then the body.
func (c *conn) writeResponse(hdr *requestHeader, resp kmsg.Response) error {
	b := append(c.wbuf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(hdr.correlationID))
	if resp.IsFlexible() && hdr.key != 18 {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.wbuf = b
	if cap(c.wbuf) > 1<<20 {
		c.wbuf = nil
	}
	return c.write(b)
}

func (c *conn) write(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
	if _, err := c.nc.Write(b); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
}

// writeUnsupported answers a key or version outside the advertised profile with
// UNSUPPORTED_VERSION. ApiVersions gets its v0 body with the supported ranges so the
// client can retry at a version it knows; any other request gets a body holding only
// the error code, since there is no schema to encode it in.
func (c *conn) writeUnsupported(hdr requestHeader) error {
	c.logger.Debug("unsupported API version", "api_key", hdr.key, "api_version", hdr.version)
	if hdr.key == 18 {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ApiKeys = apiKeys()
		return c.writeResponse(&hdr, resp)
	}
	b := append(c.wbuf[:0], 0, 0, 0, 6)
	b = binary.BigEndian.AppendUint32(b, uint32(hdr.correlationID))
	b = binary.BigEndian.AppendUint16(b, uint16(kerr.UnsupportedVersion.Code))
	return c.write(b)
}

// fetchWriter returns the connection's reusable Fetch frame writer.
func (c *conn) fetchWriter() *frameWriter {
	if c.fw == nil {
		c.fw = &frameWriter{}
	}
	return c.fw
}
