package kafkaapi

// Pipelined acknowledgements. A client's AddPartitionsToTxn (v0-v3) is
// pipelined the same way: authorized on the loop, added by the transaction
// coordinator on the goroutine (waiting for its __transaction_state record's
// commit, and for the markers of the producer's previous transaction), so
// that the requests franz-go sends at once, one per partition leader, wait
// together; a Produce behind one drains first.
//
// A Produce that waits for its acknowledgement
// (acks=all, or flush.policy=always) would hold its connection for the
// followers' next fetches, and every request a client pipelines behind it
// (franz-go sends up to 5 Produce requests at once) would pay that wait again
// before it is even appended. Instead the connection's loop appends the
// request, hands the wait and the answer to a goroutine, and reads the next
// request while the followers catch up. Answers still go out in request order,
// as the protocol requires: each waiting answer is written after the one
// before it, and any request other than a Produce, or a Produce answered at
// once, first waits for every answer in flight (so a Fetch after a Produce on
// the same connection sees its high watermark as before). Appends happen on
// the loop in request order, as they did; only the waits overlap.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxAckWaits bounds the acknowledgements in flight on one connection; the
// loop stops reading while that many wait (5: Kafka's and franz-go's most
// produce requests in flight per connection).
const maxAckWaits = 5

// ackPipe is a connection's acknowledgements in flight. Only the connection's
// loop calls its methods.
type ackPipe struct {
	ctx    context.Context // ends the waits when the connection is dropped
	cancel context.CancelFunc
	slots  chan struct{}   // one per wait in flight
	last   <-chan struct{} // closed once the newest waiting answer is written (nil: none)
	failed chan struct{}   // closed once writing an answer failed
	// adds: a client's AddPartitionsToTxn may be in flight (set by its
	// handler, cleared by drain). A Produce then drains first, so that it is
	// appended after its partitions are added (KIP-890 part 1 checks).
	adds bool
	// appends is closed once the appends of the latest Produce whose batches
	// are appended off the loop are done (transaction version 2: after an
	// implicit add and a hold, txn_add.go); nil: none. A later Produce whose
	// appends it would overtake goes off the loop too, behind it.
	appends <-chan struct{}
}

func (a *ackPipe) init(parent context.Context) {
	a.ctx, a.cancel = context.WithCancel(parent)
	a.slots = make(chan struct{}, maxAckWaits)
	a.failed = make(chan struct{})
}

// drain waits until every answer in flight is written. It reports false if
// one could not be written (the connection is closing).
func (a *ackPipe) drain() bool {
	a.adds = false
	a.appends = nil // done before their answers are written
	if a.last != nil {
		<-a.last
		a.last = nil
	}
	select {
	case <-a.failed:
		return false
	default:
		return true
	}
}

// deferAnswer runs wait on a goroutine, then writes resp once the answer
// before it is written. It blocks while maxAckWaits are in flight. Only an
// unthrottled answer is deferred: a throttled one mutes the connection after
// it is written.
func (c *conn) deferAnswer(hdr RequestHeader, resp kmsg.Response, wait func(context.Context)) {
	a := &c.acks
	a.slots <- struct{}{}
	prev, done := a.last, make(chan struct{})
	a.last = done
	go func() {
		defer func() { <-a.slots }()
		defer close(done)
		wait(a.ctx)
		if prev != nil {
			<-prev
		}
		select {
		case <-a.failed:
			return // an earlier answer was lost: the connection is closing
		default:
		}
		if a.ctx.Err() != nil && c.ctx.Err() == nil {
			return // the connection was dropped: nobody reads the answer
		}
		if resp == nil {
			return // acks=0: no answer
		}
		if err := c.writeResponse(&hdr, resp); err != nil {
			c.logger.Warn("closing connection", "err", err)
			close(a.failed)
			c.netConn().Close() // ends the loop's read
		}
	}()
}

// endAcks finishes the answers in flight when the loop ends: written if the
// connection is still good (owed is true: the loop refused a later request, or
// the server is stopping), abandoned if it is not (the client went away).
func (c *conn) endAcks(owed bool) {
	if !owed {
		c.acks.cancel()
	}
	c.acks.drain()
	c.acks.cancel()
}

// mustDrain reports whether request d waits for every answer in flight before
// it is handled: all but those its key's entry declares pipelined (a Produce
// unless a client's AddPartitionsToTxn may be in flight, a client's
// AddPartitionsToTxn).
func mustDrain(d decodedRequest, adds bool) bool {
	if d.req == nil {
		return true
	}
	return d.api.pipelined == nil || !d.api.pipelined(d.hdr.Version, adds)
}
