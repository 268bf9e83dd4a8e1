package client

// Transactions, as `skiff txn` administers them through the admin API (KIP-664):
// list, describe, and abort a hanging transaction.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ListTransactions writes a table of the cluster's transactional ids: producer
// id, state and coordinator, sorted by id. states, when given, keeps those states.
func (k *Client) ListTransactions(ctx context.Context, w io.Writer, states []string) error {
	ls, err := k.admin.ListTransactions(ctx, nil, states)
	if err != nil {
		return fmt.Errorf("list transactions: %w", k.Explain(err))
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRANSACTIONAL-ID\tPRODUCER-ID\tSTATE\tCOORDINATOR")
	for _, l := range ls.Sorted() {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", l.TxnID, l.ProducerID, l.State, l.Coordinator)
	}
	tw.Flush()
	_, err = io.WriteString(w, b.String())
	return err
}

// DescribeTransaction writes the state of one transactional id: its producer,
// state, timeout, the start of its open transaction and its partitions.
func (k *Client) DescribeTransaction(ctx context.Context, w io.Writer, id string) error {
	ds, err := k.admin.DescribeTransactions(ctx, id)
	if err != nil {
		return fmt.Errorf("describe transaction %q: %w", id, k.Explain(err))
	}
	d, ok := ds[id]
	if !ok {
		return fmt.Errorf("describe transaction %q: no answer for it", id)
	}
	if d.Err != nil {
		return fmt.Errorf("describe transaction %q: %w", id, k.Explain(d.Err))
	}
	start := "-"
	if d.StartTimestamp > 0 {
		start = time.UnixMilli(d.StartTimestamp).UTC().Format(time.RFC3339Nano)
	}
	var parts []string
	for _, t := range d.Topics.Sorted() {
		for _, p := range t.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d", t.Topic, p))
		}
	}
	_, err = fmt.Fprintf(w, "transactional id  %s\ncoordinator       %d\nstate             %s\nproducer id       %d\nproducer epoch    %d\ntimeout           %v\nstarted           %s\npartitions        %s\n",
		d.TxnID, d.Coordinator, d.State, d.ProducerID, d.ProducerEpoch,
		time.Duration(d.TimeoutMillis)*time.Millisecond, start, strings.Join(parts, " "))
	return err
}

// AbortTransaction ends a hanging transaction of producer pid on one partition
// (its coordinator lost it): an abort marker is written there at the producer's
// epoch as the partition knows it (DescribeProducers), as
// kafka-transactions.sh abort does.
func (k *Client) AbortTransaction(ctx context.Context, topic string, partition int32, pid int64) (firstOffset int64, err error) {
	ps, err := k.admin.DescribeProducers(ctx, kadm.TopicsSet{topic: {partition: {}}})
	if err != nil {
		return -1, fmt.Errorf("describe producers of %s-%d: %w", topic, partition, k.Explain(err))
	}
	p, ok := ps[topic].Partitions[partition]
	if !ok {
		return -1, fmt.Errorf("describe producers of %s-%d: no answer for it", topic, partition)
	}
	if p.Err != nil {
		return -1, fmt.Errorf("describe producers of %s-%d: %w", topic, partition, k.Explain(p.Err))
	}
	var found *kadm.DescribedProducer
	for _, dp := range p.ActiveProducers {
		if dp.ProducerID == pid {
			found = &dp
			break
		}
	}
	switch {
	case found == nil:
		return -1, fmt.Errorf("producer %d has no state on %s-%d", pid, topic, partition)
	case found.CurrentTxnStartOffset < 0:
		return -1, fmt.Errorf("producer %d has no open transaction on %s-%d", pid, topic, partition)
	}
	resps, err := k.admin.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: pid, ProducerEpoch: int16(found.ProducerEpoch),
		CoordinatorEpoch: found.CoordinatorEpoch, Topics: kadm.TopicsSet{topic: {partition: {}}}})
	if err != nil {
		return -1, fmt.Errorf("write the abort marker: %w", k.Explain(err))
	}
	for _, r := range resps {
		for _, ts := range r.Topics {
			for _, pr := range ts.Partitions {
				if pr.Err != nil {
					return -1, fmt.Errorf("write the abort marker to %s-%d: %w", pr.Topic, pr.Partition, k.Explain(pr.Err))
				}
			}
		}
	}
	if len(resps) == 0 {
		return -1, errors.New("write the abort marker: no answer")
	}
	return found.CurrentTxnStartOffset, nil
}
