package kafkaapi_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
	"skiff/internal/syncbuf"
)

// logSink collects a node's JSON log lines.
type logSink struct{ syncbuf.Buffer }

// refusals counts the log lines of refusals with reason, by client address.
func (s *logSink) refusals(reason string) map[string]int {
	out := map[string]int{}
	for _, line := range strings.Split(s.String(), "\n") {
		var rec struct{ Reason, Client string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Reason == reason {
			out[rec.Client]++
		}
	}
	return out
}

// dialFrom connects to addr from the loopback address ip (any of 127.0.0.0/8), so
// that one test can act as several client addresses.
func dialFrom(t *testing.T, ip, addr string) *kconn {
	t.Helper()
	d := net.Dialer{Timeout: ioTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, ip, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &kconn{t: t, nc: nc, corr: 100}
}

// served reports whether the connection answers an ApiVersions request (false:
// the server closed it).
func (c *kconn) served() bool {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	corr := c.nextCorr()
	if err := c.tryWrite(encodeRequest(req, corr)); err != nil {
		return false
	}
	frame, closed := c.closedOrAnswered("ApiVersions")
	if closed {
		return false
	}
	if _, err := parseResponse(18, 0, corr, frame); err != nil {
		c.t.Fatal(err)
	}
	return true
}

// TestLimits checks the limits against hostile clients on a node with small limits:
// each refusal closes the connection (or refuses it at accept), is logged once per
// client address and reason, and a normal client is served throughout.
func TestLimits(t *testing.T) {
	const (
		maxConns, perIP = 30, 10
		readTimeout     = 500 * time.Millisecond
		memory          = 1 << 20 // queued.max.request.bytes = socket.request.max.bytes
		maxPartitions   = 100
	)
	var logs logSink
	n, err := startNode(t.TempDir(), func(c *appliance.Config) {
		c.MaxConnections, c.MaxConnectionsPerIP = maxConns, perIP
		c.ReadTimeout = readTimeout
		c.MaxRequestBytes, c.QueuedMaxRequestBytes = memory, memory
		c.MaxPartitionsPerRequest = maxPartitions
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	addr := n.KafkaAddr()
	admin := dialFrom(t, "127.0.0.100", addr)
	topic := topicName(t, "")
	createTopic(t, admin, topic, 1, nil)
	by := startBystander(t, addr) // from 127.0.0.1, one connection
	defer by.finish(t)

	t.Run("SlowSenders", func(t *testing.T) {
		// 20 clients from 10 addresses drip an ApiVersions frame a byte every 100 ms:
		// cut off after socket-read-timeout. 5 send theirs in pieces, in time: served.
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		frame := encodeRequest(req, 1)
		var wg sync.WaitGroup
		errs := make(chan error, 25)
		for i := range 25 {
			ip := fmt.Sprintf("127.0.1.%d", i/2)
			c := dialFrom(t, ip, addr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				slow := i < 20
				start := time.Now()
				for j := 0; j < len(frame); {
					step, pause := 1, 100*time.Millisecond
					if !slow {
						step, pause = (len(frame)+2)/3, 50*time.Millisecond
					}
					end := min(j+step, len(frame))
					if c.tryWrite(frame[j:end]) != nil {
						break // closed under us
					}
					j = end
					time.Sleep(pause) // the client's pace, not synchronisation
				}
				resp, err := c.readFrame(ioTimeout)
				switch {
				case slow && err == nil:
					errs <- fmt.Errorf("slow client %d served (%d-byte answer)", i, len(resp))
				case slow && time.Since(start) < readTimeout:
					errs <- fmt.Errorf("slow client %d closed after %v, before socket-read-timeout", i, time.Since(start))
				case !slow && err != nil:
					errs <- fmt.Errorf("client %d sending in time not served: %v", i, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		by.check(t)
		got := logs.refusals("read_timeout")
		for i := range 10 {
			if ip := fmt.Sprintf("127.0.1.%d", i); got[ip] != 1 {
				t.Errorf("read_timeout refusals of %s logged %d times, want once", ip, got[ip])
			}
		}
	})

	t.Run("TooManyPartitions", func(t *testing.T) {
		metadata := func(topics int) *kmsg.MetadataRequest {
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(8)
			for i := range topics {
				mt := kmsg.NewMetadataRequestTopic()
				mt.Topic = kmsg.StringPtr(fmt.Sprintf("%s-none-%d", topic, i))
				req.Topics = append(req.Topics, mt)
			}
			return req
		}
		c := dial(t, addr)
		if resp := c.do(metadata(maxPartitions)).(*kmsg.MetadataResponse); len(resp.Topics) != maxPartitions {
			t.Fatalf("%d topics answered", len(resp.Topics))
		}
		c.send(metadata(maxPartitions + 1))
		c.expectClosed("Metadata naming max-partitions-per-request + 1 topics")

		var parts []fetchPart
		for p := range maxPartitions + 1 {
			parts = append(parts, fetchPart{topic: topic, partition: int32(p)})
		}
		c = dial(t, addr)
		c.send(fetchRequest(11, 0, 0, 1<<20, parts...))
		c.expectClosed("Fetch naming max-partitions-per-request + 1 partitions")

		// Produce is refused before it is decoded.
		p := produceRequest(7, 1, topic, 0, makeBatch(noProducer, "x"))
		for i := 1; i <= maxPartitions; i++ {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = int32(i)
			p.Topics[0].Partitions = append(p.Topics[0].Partitions, rp)
		}
		before := logEnd(t, admin, topic, 0)
		c = dial(t, addr)
		c.send(p)
		c.expectClosed("Produce naming max-partitions-per-request + 1 partitions")
		if after := logEnd(t, admin, topic, 0); after != before {
			t.Errorf("log end moved from %d to %d", before, after)
		}
		by.check(t)
		if got := logs.refusals("too_many_partitions"); got["127.0.0.1"] != 1 {
			t.Errorf("too_many_partitions refusals logged %v, want once for 127.0.0.1", got)
		}
	})

	t.Run("RequestMemory", func(t *testing.T) {
		// A Metadata request could take 64 times its size to decode: above 1/64 of
		// queued.max.request.bytes it is refused; a Produce of 20 times that is not.
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(8)
		for len(encodeRequest(req, 1)) < memory/64+100 {
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(strings.Repeat("m", 200))
			req.Topics = append(req.Topics, mt)
		}
		c := dial(t, addr)
		c.send(req)
		c.expectClosed("Metadata request above queued.max.request.bytes/64")
		mustProduce(t, dial(t, addr), topic, 0, makeBatch(noProducer, strings.Repeat("p", 20*memory/64)))
		by.check(t)
		if got := logs.refusals("request_memory"); got["127.0.0.1"] != 1 {
			t.Errorf("request_memory refusals logged %v, want once for 127.0.0.1", got)
		}
	})

	t.Run("ReadersWaitForMemory", func(t *testing.T) {
		// A client holds all of queued.max.request.bytes with a frame of that size it
		// has not finished sending; another request waits until it is done, then is
		// answered.
		hog := dial(t, addr)
		big := encodeRequest(produceRequest(7, 1, topic, 0, makeBatch(noProducer, strings.Repeat("h", memory-200))), 1)
		if len(big)-4 > memory {
			t.Fatalf("frame of %d bytes", len(big)-4)
		}
		hog.write(big[:len(big)/2])
		waitFor(t, ioTimeout, "the frame being read to take its memory", func() bool {
			return metric(t, n.HTTPAddr(), "skiff_request_memory_bytes") >= float64(len(big)-4)
		})
		waiter := dial(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(0)
		corr := waiter.send(req)
		if frame, err := waiter.readFrame(300 * time.Millisecond); err == nil {
			t.Fatalf("answered (%d bytes) while the memory was taken", len(frame))
		}
		hog.write(big[len(big)/2:])
		frame, err := waiter.readFrame(ioTimeout)
		if err != nil {
			t.Fatalf("not answered once the memory was free: %v", err)
		}
		if _, err := parseResponse(18, 0, corr, frame); err != nil {
			t.Fatal(err)
		}
		hog.recv(&kmsg.ProduceRequest{Version: 7}, 1)
		by.check(t)
		// Everything taken is given back (the bystander's requests come and go).
		waitFor(t, ioTimeout, "the request memory in use to return to 0", func() bool {
			return metric(t, n.HTTPAddr(), "skiff_request_memory_bytes") == 0
		})
	})
	t.Run("Connections", func(t *testing.T) {
		// Last: it fills the node. 127.0.0.1 has the bystander; 127.0.0.100 the admin
		// connection.
		var open []*kconn
		for i := 1; i < perIP; i++ {
			c := dialFrom(t, "127.0.0.1", addr)
			if !c.served() {
				t.Fatalf("connection %d from 127.0.0.1 refused below max-connections-per-ip", i+1)
			}
			open = append(open, c)
		}
		for range 5 {
			if dialFrom(t, "127.0.0.1", addr).served() {
				t.Fatal("connection above max-connections-per-ip served")
			}
		}
		// Other addresses fill the node up to max-connections: 2 + 9 + 10 + 9.
		for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
			for i := 0; i < perIP && 2+len(open) < maxConns; i++ {
				c := dialFrom(t, ip, addr)
				if !c.served() {
					t.Fatalf("connection %d from %s refused below the limits", i+1, ip)
				}
				open = append(open, c)
			}
		}
		if got := 2 + len(open); got != maxConns {
			t.Fatalf("%d connections served, want max-connections %d", got, maxConns)
		}
		for range 3 {
			if dialFrom(t, "127.0.0.5", addr).served() {
				t.Fatal("connection above max-connections served")
			}
		}
		by.check(t)
		// A closed connection frees its place.
		open[0].nc.Close()
		waitFor(t, ioTimeout, "a connection from 127.0.0.1 to be accepted again", func() bool {
			return dialFrom(t, "127.0.0.1", addr).served()
		})
		for _, c := range open {
			c.nc.Close()
		}
		perIPLogs := logs.refusals("max_connections_per_ip")
		if perIPLogs["127.0.0.1"] != 1 {
			t.Errorf("max_connections_per_ip refusals of 127.0.0.1 logged %d times, want once: %v", perIPLogs["127.0.0.1"], perIPLogs)
		}
		if got := logs.refusals("max_connections"); got["127.0.0.5"] != 1 {
			t.Errorf("max_connections refusals of 127.0.0.5 logged %v, want once", got)
		}
	})
}
