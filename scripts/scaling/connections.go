package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// connResult is the idle-connection measurement: n client connections, each
// served one ApiVersions request, then held open.
type connResult struct {
	Connections   int     `json:"connections"`
	Opened        int     `json:"opened"` // answered their ApiVersions
	RSSBeforeMB   float64 `json:"rss_before_mb"`
	RSSAfterMB    float64 `json:"rss_after_mb"`
	RSSPerConnKB  float64 `json:"rss_per_connection_kb"`
	OpenFiles     int     `json:"open_files"`
	IdleCPUPct    float64 `json:"idle_cpu_percent"`
	FirstFailure  string  `json:"first_failure,omitempty"`
	OpenedSeconds float64 `json:"open_seconds"`
}

func measureConnections(ctx context.Context, cfg config, count int) (res connResult, err error) {
	res.Connections = count
	n, err := newNode(cfg.bin, cfg.work+"/data")
	if err != nil {
		return res, err
	}
	if _, err := n.start(ctx); err != nil {
		return res, err
	}
	defer n.stop(syscall.SIGTERM)
	time.Sleep(5 * time.Second) // settle: a fixed pause, not a wait for a condition
	before, err := n.stat()
	if err != nil {
		return res, err
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	began := time.Now()
	for i := range count {
		c, err := apiVersions(n.kafka, int32(i))
		if err != nil {
			res.FirstFailure = fmt.Sprintf("connection %d: %v", i+1, err)
			break
		}
		conns = append(conns, c)
	}
	res.OpenedSeconds = time.Since(began).Seconds()
	res.Opened = len(conns)
	var idle result
	if err := idleStats(n, cfg.idle, &idle); err != nil {
		return res, err
	}
	res.IdleCPUPct, res.RSSAfterMB, res.OpenFiles = idle.IdleCPUPercent, idle.IdleRSSMB, idle.OpenFiles
	res.RSSBeforeMB = float64(before.rssKB) / 1024
	if res.Opened > 0 {
		res.RSSPerConnKB = (res.RSSAfterMB - res.RSSBeforeMB) * 1024 / float64(res.Opened)
	}
	return res, nil
}

// apiVersions dials addr and exchanges one ApiVersions v0 request and answer.
func apiVersions(addr string, corr int32) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	const clientID = "scaling"
	req := binary.BigEndian.AppendUint32(nil, uint32(2+2+4+2+len(clientID)))
	req = binary.BigEndian.AppendUint16(req, 18) // ApiVersions
	req = binary.BigEndian.AppendUint16(req, 0)
	req = binary.BigEndian.AppendUint32(req, uint32(corr))
	req = binary.BigEndian.AppendUint16(req, uint16(len(clientID)))
	req = append(req, clientID...)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req); err != nil {
		c.Close()
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		c.Close()
		return nil, fmt.Errorf("no answer: %w", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil || binary.BigEndian.Uint32(body) != uint32(corr) {
		c.Close()
		return nil, fmt.Errorf("bad answer: %v", err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}
