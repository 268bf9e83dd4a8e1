// Command txnlog runs transactions of 1,000 1 KiB records back to back for
// -d with one franz-go transactional producer, logging every EndTxn the client
// sends with commit=false and every franz-go warning, then prints how many
// transactions it committed and how many aborts it sent. With
// scripts/perf/txnaudit on the same topic afterwards it tells a transaction the
// client aborted from one the broker aborted behind its back (issue 16, TV2).
//
//	go run ./scripts/perf/txnlog -b ADDR -t T [-d 5s] [-id L]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type logger struct{ aborts atomic.Int64 }

func (l *logger) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *logger) Log(level kgo.LogLevel, msg string, kv ...any) {
	switch {
	case msg == "ending transaction":
		// kv holds "commit", false for an abort; Sprint joins them.
		if strings.Contains(fmt.Sprint(kv...), "commitfalse") {
			l.aborts.Add(1)
			fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000000"), "abort sent:", kv)
		}
	case level <= kgo.LogLevelWarn || strings.Contains(msg, "abort"):
		fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000000"), msg, kv)
	}
}

func main() {
	b := flag.String("b", "127.0.0.1:9092", "broker")
	topic := flag.String("t", "", "topic (created with the broker's defaults if missing)")
	d := flag.Duration("d", 5*time.Second, "run for")
	id := flag.String("id", "txnlog", "transactional id")
	flag.Parse()
	l := &logger{}
	k, err := kgo.NewClient(kgo.SeedBrokers(*b), kgo.DefaultProduceTopic(*topic), kgo.TransactionalID(*id),
		kgo.AllowAutoTopicCreation(), kgo.WithLogger(l))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer k.Close()
	val := make([]byte, 1024)
	var failed atomic.Int64
	n := 0
	ctx := context.Background()
	for t0 := time.Now(); time.Since(t0) < *d; n++ {
		if err := k.BeginTransaction(); err != nil {
			fmt.Fprintln(os.Stderr, "begin:", err)
			os.Exit(1)
		}
		for range 1000 {
			k.Produce(ctx, &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
			})
		}
		if err := k.Flush(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "flush:", err)
			os.Exit(1)
		}
		if err := k.EndTransaction(ctx, kgo.TryCommit); err != nil {
			fmt.Fprintln(os.Stderr, "end:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("transactions %d, aborts sent %d, records failed %d\n", n, l.aborts.Load(), failed.Load())
}
