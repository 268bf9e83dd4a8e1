// Command txnaudit reads a topic read_uncommitted with its control records and
// prints, per partition, the transactional batches' producers and epochs and the
// markers (commit or abort) that end them, then the records each isolation level
// would return, to find transactions that read_committed drops (debugging).
//
//	go run ./scripts/perf/txnaudit -b ADDR -t T [-v]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	b := flag.String("b", "127.0.0.1:9092", "broker")
	topic := flag.String("t", "", "topic")
	verbose := flag.Bool("v", false, "print every transaction")
	flag.Parse()
	k, err := kgo.NewClient(kgo.SeedBrokers(*b), kgo.ConsumeTopics(*topic), kgo.KeepControlRecords(),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer k.Close()
	type open struct {
		epoch   int16
		first   int64
		records int
	}
	type part struct {
		open                      map[int64]*open
		committed, aborted, nontx int
		abortedTxns, commits      int
	}
	parts := map[int32]*part{}
	idle := time.Now()
	for time.Since(idle) < 3*time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := k.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			p := parts[r.Partition]
			if p == nil {
				p = &part{open: map[int64]*open{}}
				parts[r.Partition] = p
			}
			if !r.Attrs.IsTransactional() {
				p.nontx++
				return
			}
			o := p.open[r.ProducerID]
			if r.Attrs.IsControl() {
				commit := len(r.Key) >= 4 && r.Key[3] == 1
				if o == nil {
					fmt.Printf("p%d offset %d: marker commit=%v of producer %d epoch %d with nothing open\n", r.Partition, r.Offset, commit, r.ProducerID, r.ProducerEpoch)
					return
				}
				if o.epoch != r.ProducerEpoch || !commit || *verbose {
					fmt.Printf("p%d offset %d: marker commit=%v epoch %d ends transaction at epoch %d from %d (%d records)\n", r.Partition, r.Offset, commit, r.ProducerEpoch, o.epoch, o.first, o.records)
				}
				if commit {
					p.committed += o.records
					p.commits++
				} else {
					p.aborted += o.records
					p.abortedTxns++
				}
				delete(p.open, r.ProducerID)
				return
			}
			if o == nil {
				o = &open{epoch: r.ProducerEpoch, first: r.Offset}
				p.open[r.ProducerID] = o
			} else if o.epoch != r.ProducerEpoch {
				fmt.Printf("p%d offset %d: batch of producer %d at epoch %d inside its open transaction at epoch %d from %d\n", r.Partition, r.Offset, r.ProducerID, r.ProducerEpoch, o.epoch, o.first)
				o.epoch = r.ProducerEpoch
			}
			o.records++
		})
		if n > 0 {
			idle = time.Now()
		}
	}
	var c, a, nt int
	for id, p := range parts {
		fmt.Printf("p%d: %d non-transactional, %d committed in %d transactions, %d aborted in %d, %d producers open\n", id, p.nontx, p.committed, p.commits, p.aborted, p.abortedTxns, len(p.open))
		c, a, nt = c+p.committed, a+p.aborted, nt+p.nontx
	}
	fmt.Printf("total: %d non-transactional, %d committed, %d aborted; read_committed %d, read_uncommitted %d\n", nt, c, a, nt+c, nt+c+a)
}
