package client

// Share-group consumption for `skiff consume --share`: records are acquired from
// the share group (KIP-932), printed, then accepted; --reject-if rejects matching
// records instead (the group's dead-letter topic, if set, receives them).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/recordfmt"
)

// shareConsume runs the poll loop of a share group member and returns how many
// records it printed.
func (k *Client) shareConsume(ctx context.Context, o ConsumeOptions) (int64, error) {
	cons, err := k.With(kgo.ShareGroup(o.Share), kgo.ConsumeTopics(o.Topic), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cons.Close()
	out := bufio.NewWriterSize(o.Out, 64<<10)
	var (
		printed int64
		line    []byte
	)
	for {
		var fs kgo.Fetches
		if o.Count > 0 {
			fs = cons.kafka.PollRecords(ctx, int(min(o.Count-printed, 1<<20)))
		} else {
			fs = cons.kafka.PollFetches(ctx)
		}
		finished := false
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if finished {
				r.Ack(kgo.AckRelease) // polled beyond --count: another member gets it
				continue
			}
			if o.RejectIf != nil && o.RejectIf.Match(r.Value) {
				r.Ack(kgo.AckReject)
				continue
			}
			line = recordfmt.Append(line[:0], o.Format, r, o.KeySep)
			if _, err := out.Write(line); err != nil {
				return printed, fmt.Errorf("write output: %w", err)
			}
			r.Ack(kgo.AckAccept)
			printed++
			finished = o.Count > 0 && printed >= o.Count
		}
		if err := out.Flush(); err != nil {
			return printed, fmt.Errorf("write output: %w", err)
		}
		if finished {
			return printed, k.flushAcks(ctx, cons, o.Share)
		}
		for _, fe := range fs.Errors() {
			switch {
			case errors.Is(fe.Err, kgo.ErrClientClosed), errors.Is(fe.Err, context.Canceled) && ctx.Err() != nil:
				return printed, k.flushAcks(ctx, cons, o.Share)
			case fe.Topic != "" && fe.Partition >= 0:
				return printed, fmt.Errorf("consume topic %q partition %d: %w", fe.Topic, fe.Partition, topicErrorIfUnknown(k.Explain(fe.Err)))
			default:
				return printed, fmt.Errorf("consume topic %q as share group %q: %w", o.Topic, o.Share, k.Explain(fe.Err))
			}
		}
	}
}

// flushAcks sends the acknowledgements of printed records before the client
// closes, even after an interrupt.
func (k *Client) flushAcks(ctx context.Context, cons *Client, group string) error {
	ctx, cancel := k.RequestCtx(context.WithoutCancel(ctx))
	defer cancel()
	if err := cons.kafka.FlushAcks(ctx); err != nil {
		return fmt.Errorf("acknowledge records of share group %q: %w", group, k.Explain(err))
	}
	return nil
}
