package kafkaapi_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bystander keeps a second connection busy with ApiVersions round trips while bad
// input is thrown at the server on other connections, and records any failure.
type bystander struct {
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	err      error
	requests int
}

func startBystander(t *testing.T, addr string) *bystander {
	c := dial(t, addr)
	b := &bystander{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		tick := time.NewTicker(2 * time.Millisecond) // pacing, not synchronisation
		defer tick.Stop()
		for i := 0; i < 100_000; i++ {
			select {
			case <-b.stop:
				return
			case <-tick.C:
			}
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(3)
			corr := c.nextCorr()
			err := c.tryWrite(encodeRequest(req, corr))
			var frame []byte
			if err == nil {
				frame, err = c.readFrame(ioTimeout)
			}
			if err == nil {
				_, err = parseResponse(18, 3, corr, frame)
			}
			b.mu.Lock()
			if err != nil {
				b.err = fmt.Errorf("bystander request %d: %w", i, err)
			} else {
				b.requests++
			}
			b.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return b
}

// check fails the test if the bystander has failed, and waits until it completes
// one more round trip, so the server has served it after whatever came before.
func (b *bystander) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	n := b.requests
	b.mu.Unlock()
	waitFor(t, ioTimeout, "the bystander connection to be served", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.err != nil {
			t.Fatal(b.err)
		}
		return b.requests > n
	})
}

func (b *bystander) finish(t *testing.T) {
	close(b.stop)
	<-b.done
	if b.err != nil {
		t.Error(b.err)
	}
	t.Logf("bystander completed %d requests", b.requests)
}

// TestBadInput throws malformed and refused requests at the server. Each is answered
// with its Kafka error or ends its connection, nothing is appended, and another
// connection is served throughout.
func TestBadInput(t *testing.T) {
	n := sharedNode(t)
	addr := n.KafkaAddr()
	admin := dial(t, addr)
	topic := topicName(t, "")
	createTopic(t, admin, topic, 1, nil)
	small := topicName(t, "small")
	createTopic(t, admin, small, 1, map[string]string{"max.message.bytes": "1024"})
	mustProduce(t, admin, topic, 0, makeBatch(noProducer, "seed"))
	mustProduce(t, admin, small, 0, makeBatch(noProducer, "seed"))

	by := startBystander(t, addr)
	defer by.finish(t)

	// nothingAppended runs fn and checks that neither topic grew.
	nothingAppended := func(t *testing.T, fn func(t *testing.T)) {
		t.Helper()
		before, beforeSmall := logEnd(t, admin, topic, 0), logEnd(t, admin, small, 0)
		fn(t)
		if after := logEnd(t, admin, topic, 0); after != before {
			t.Errorf("log end of %s moved from %d to %d", topic, before, after)
		}
		if after := logEnd(t, admin, small, 0); after != beforeSmall {
			t.Errorf("log end of %s moved from %d to %d", small, beforeSmall, after)
		}
		by.check(t)
	}
	// refused produces records to topic/partition on a fresh connection and expects code.
	refused := func(t *testing.T, topic string, partition int32, records []byte, code int16) {
		t.Helper()
		nothingAppended(t, func(t *testing.T) {
			p := produce(t, dial(t, addr), topic, partition, records)
			wantCode(t, "produce", p.ErrorCode, code)
			if p.BaseOffset != -1 {
				t.Errorf("refused batch got base offset %d, want -1", p.BaseOffset)
			}
		})
	}

	t.Run("GarbageFrames", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		random := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}
		type garbage struct {
			name  string
			frame []byte
		}
		var cases []garbage
		for i := range 8 {
			body := random(16 + rng.IntN(300))
			cases = append(cases, garbage{fmt.Sprintf("random-%d", i), binary.BigEndian.AppendUint32(nil, uint32(len(body)))})
			cases[len(cases)-1].frame = append(cases[len(cases)-1].frame, body...)
		}
		// Valid headers of served requests followed by random bodies.
		for _, h := range []struct{ key, version int16 }{{0, 7}, {0, 3}, {1, 11}, {1, 4}, {3, 8}, {19, 4}, {18, 3}, {22, 1}} {
			for i := range 3 {
				cases = append(cases, garbage{fmt.Sprintf("key%d-v%d-%d", h.key, h.version, i), rawFrame(h.key, h.version, 7, random(8+rng.IntN(200)))})
			}
		}
		// A valid Produce whose body is cut short.
		full := encodeRequest(produceRequest(7, -1, topic, 0, makeBatch(noProducer, "cut")), 7)
		for _, cut := range []int{20, len(full) / 2, len(full) - 1} {
			f := append([]byte(nil), full[:cut]...)
			binary.BigEndian.PutUint32(f, uint32(cut-4))
			cases = append(cases, garbage{fmt.Sprintf("produce-cut-at-%d", cut), f})
		}
		// Frames too short to hold a request header.
		for _, size := range []int{0, 1, 9} {
			cases = append(cases, garbage{fmt.Sprintf("size-%d", size), append(binary.BigEndian.AppendUint32(nil, uint32(size)), random(size)...)})
		}
		for _, g := range cases {
			t.Run(g.name, func(t *testing.T) {
				nothingAppended(t, func(t *testing.T) {
					c := dial(t, addr)
					c.write(g.frame)
					frame, closed := c.closedOrAnswered(g.name)
					if closed {
						return
					}
					// An answer must carry the request's correlation id; the connection
					// must then still work.
					if len(frame) < 4 || len(g.frame) < 12 {
						t.Fatalf("%d-byte answer to a %d-byte frame", len(frame), len(g.frame))
					}
					corr := int32(binary.BigEndian.Uint32(g.frame[8:]))
					if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
						t.Fatalf("answer with correlation id %d, want %d", got, corr)
					}
					advertisedProfile(t, c)
				})
			})
		}
	})

	t.Run("FrameAboveRequestLimit", func(t *testing.T) {
		// A valid produce request one byte over socket.request.max.bytes: closed unread.
		big := strings.Repeat("x", sharedMaxRequestBytes)
		req := encodeRequest(produceRequest(7, -1, topic, 0, makeBatch(noProducer, big)), 9)
		if len(req)-4 <= sharedMaxRequestBytes {
			t.Fatalf("request of %d bytes is not above the limit", len(req)-4)
		}
		nothingAppended(t, func(t *testing.T) {
			c := dial(t, addr)
			go c.tryWrite(req) // the server may close before reading it all
			c.expectClosed("request above socket.request.max.bytes")
		})
		// A frame of exactly the limit is read (and refused by max.message.bytes).
		size := func(fill string) int {
			return len(encodeRequest(produceRequest(7, -1, small, 0, makeBatch(noProducer, fill)), 9)) - 4
		}
		fill := strings.Repeat("y", sharedMaxRequestBytes-size(""))
		for size(fill) > sharedMaxRequestBytes {
			fill = fill[1:] // the record's length varints grow with the value
		}
		if got := size(fill); got != sharedMaxRequestBytes {
			t.Fatalf("could not build a %d-byte request (got %d)", sharedMaxRequestBytes, got)
		}
		refused(t, small, 0, makeBatch(noProducer, fill), kerr.MessageTooLarge.Code)
	})

	for _, size := range []uint32{sharedMaxRequestBytes + 1, 1 << 30, 0x7fffffff, 0x80000000, 0xffffffff} {
		t.Run(fmt.Sprintf("SizePrefix-%#x", size), func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			nothingAppended(t, func(t *testing.T) {
				c := dial(t, addr)
				c.write(binary.BigEndian.AppendUint32(nil, size))
				c.expectClosed(fmt.Sprintf("size prefix %#x", size))
			})
			runtime.ReadMemStats(&after)
			// The server runs in this process: had it allocated the frame, TotalAlloc
			// would have grown by the frame size.
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
				t.Errorf("%d MiB allocated while refusing a %#x-byte frame", grown>>20, size)
			}
		})
	}

	t.Run("CorruptBatch", func(t *testing.T) {
		good := makeBatch(noProducer, "one", "two", "three")
		for _, tc := range []struct {
			name  string
			spoil func(b []byte) []byte
		}{
			{"flipped-value-byte", func(b []byte) []byte { b[len(b)-3] ^= 0x40; return b }},
			{"flipped-attributes", func(b []byte) []byte { b[22] ^= 0x01; return b }},
			{"flipped-crc", func(b []byte) []byte { b[18] ^= 0xff; return b }},
			{"magic-1", func(b []byte) []byte { b[16] = 1; return b }},
			{"last-offset-delta-wrong", func(b []byte) []byte { binary.BigEndian.PutUint32(b[23:], 5); fixCRC(b); return b }},
			{"truncated", func(b []byte) []byte { return b[:len(b)-4] }},
			{"length-too-long", func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], uint32(len(b))); return b }},
			{"header-only", func(b []byte) []byte { return b[:40] }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				refused(t, topic, 0, tc.spoil(append([]byte(nil), good...)), kerr.CorruptMessage.Code)
			})
		}
	})

	t.Run("MessageTooLarge", func(t *testing.T) {
		refused(t, small, 0, makeBatch(noProducer, strings.Repeat("z", 2000)), kerr.MessageTooLarge.Code)
		// Just under the limit is accepted.
		ok := makeBatch(noProducer, strings.Repeat("z", 900))
		if len(ok) > 1024 {
			t.Fatalf("test batch of %d bytes", len(ok))
		}
		mustProduce(t, admin, small, 0, ok)
	})

	t.Run("TwoBatchesInOnePartition", func(t *testing.T) {
		two := append(makeBatch(noProducer, "first"), makeBatch(noProducer, "second")...)
		refused(t, topic, 0, two, kerr.InvalidRecord.Code)
	})

	t.Run("InvalidRequiredAcks", func(t *testing.T) {
		for _, acks := range []int16{2, -2, 3} {
			nothingAppended(t, func(t *testing.T) {
				resp := dial(t, addr).do(produceRequest(7, acks, topic, 0, makeBatch(noProducer, "acks"))).(*kmsg.ProduceResponse)
				wantCode(t, fmt.Sprintf("acks=%d", acks), resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequiredAcks.Code)
			})
		}
	})

	t.Run("UnknownPartition", func(t *testing.T) {
		refused(t, topic, 1, makeBatch(noProducer, "p1"), kerr.UnknownTopicOrPartition.Code)
		refused(t, topic, -1, makeBatch(noProducer, "p-1"), kerr.UnknownTopicOrPartition.Code)
		missing := topicName(t, "missing")
		refused(t, missing, 0, makeBatch(noProducer, "nowhere"), kerr.UnknownTopicOrPartition.Code)
		// Produce does not create topics.
		wantCode(t, "metadata of the produced-to unknown topic", metadataTopic(t, admin, missing).ErrorCode, kerr.UnknownTopicOrPartition.Code)
		p := fetchedPartition(t, fetchNow(t, admin, 1<<20, fetchPart{topic: topic, partition: 1}), topic, 1)
		wantCode(t, "fetch partition 1", p.ErrorCode, kerr.UnknownTopicOrPartition.Code)
		wantCode(t, "list offsets of partition 1", listOffsetsAt(t, admin, 5, topic, 1, -1).ErrorCode, kerr.UnknownTopicOrPartition.Code)
		by.check(t)
	})

	t.Run("InvalidTopicNames", func(t *testing.T) {
		for _, name := range []string{"bad/name", "has space", "..", ".", "", strings.Repeat("n", 250), "tab\there", "ü"} {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.SetVersion(4)
			req.TimeoutMillis = 10000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
			req.Topics = append(req.Topics, rt)
			resp := admin.do(req).(*kmsg.CreateTopicsResponse)
			wantCode(t, fmt.Sprintf("create %q", name), resp.Topics[0].ErrorCode, kerr.InvalidTopicException.Code)
			if name == "" {
				continue // Metadata cannot name the empty topic: an empty list means all topics at v0
			}
			for _, v := range []int16{1, 8} {
				mreq := kmsg.NewPtrMetadataRequest()
				mreq.SetVersion(v)
				mreq.AllowAutoTopicCreation = true
				mt := kmsg.NewMetadataRequestTopic()
				mt.Topic = kmsg.StringPtr(name)
				mreq.Topics = append(mreq.Topics, mt)
				mresp := admin.do(mreq).(*kmsg.MetadataResponse)
				if len(mresp.Topics) != 1 {
					t.Fatalf("metadata v%d for %q: %d topics", v, name, len(mresp.Topics))
				}
				wantCode(t, fmt.Sprintf("metadata v%d for %q", v, name), mresp.Topics[0].ErrorCode, kerr.InvalidTopicException.Code)
			}
		}
		by.check(t)
	})

	t.Run("AcksZero", func(t *testing.T) {
		c := dial(t, addr)
		before := logEnd(t, admin, topic, 0)
		// A refused batch with acks=0: no answer either, and nothing appended.
		c.send(produceRequest(7, 0, topic, 0, append(makeBatch(noProducer, "bad"), 0)))
		c.send(produceRequest(7, 0, topic, 0, makeBatch(noProducer, "fire", "and", "forget")))
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(8)
		corr := c.send(req)
		frame, err := c.readFrame(ioTimeout)
		if err != nil {
			t.Fatal(err)
		}
		// The first frame must be the Metadata answer: no produce answer before it.
		if _, err := parseResponse(3, 8, corr, frame); err != nil {
			t.Fatalf("first frame after two acks=0 produces: %v", err)
		}
		// The records become visible once synced (flush.policy=always, the default of
		// a topic with one replica, moves the high watermark only over synced records).
		deadline := time.Now().Add(5 * time.Second)
		after := logEnd(t, admin, topic, 0)
		for after < before+3 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
			after = logEnd(t, admin, topic, 0)
		}
		if after != before+3 {
			t.Fatalf("log end %d after the acks=0 produce, want %d", after, before+3)
		}
		by.check(t)
	})
}
