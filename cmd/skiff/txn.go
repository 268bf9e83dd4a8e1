package main

// skiff txn list|describe|abort: transaction administration through the Kafka
// admin API (KIP-664), as kafka-transactions.sh does it.

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"
)

func txnCommand() *cli.Command {
	return &cli.Command{
		Name:  "txn",
		Usage: "list and describe transactions; abort a hanging one",
		Subcommands: []*cli.Command{
			flagsAnywhere(&cli.Command{
				Name:            "list",
				Aliases:         []string{"ls"},
				Usage:           "list transactional ids: producer id, state and coordinator",
				HideHelpCommand: true,
				Flags: append(clientFlags(),
					&cli.StringSliceFlag{Name: "state", Usage: "only transactions in `STATE` (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort); repeatable"},
				),
				Action: runTxnList,
			}),
			flagsAnywhere(&cli.Command{
				Name:            "describe",
				Usage:           "show a transactional id's producer, state, timeout and partitions",
				ArgsUsage:       "ID",
				HideHelpCommand: true,
				Flags:           clientFlags(),
				Action:          runTxnDescribe,
			}),
			flagsAnywhere(&cli.Command{
				Name:      "abort",
				Usage:     "abort a hanging transaction on one partition",
				ArgsUsage: " ",
				Description: "Writes an abort marker for producer --producer-id's open transaction on\n" +
					"--topic/--partition, at the producer's epoch there (found with\n" +
					"DescribeProducers). Use it for a transaction its coordinator no longer\n" +
					"knows (a hanging transaction holds back the last stable offset, so\n" +
					"read_committed consumers stop there). Find one with\n" +
					"`skiff txn list --state Ongoing` and DescribeProducers' open transactions.",
				HideHelpCommand: true,
				Flags: append(clientFlags(),
					&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "`TOPIC` of the partition (required)"},
					&cli.IntFlag{Name: "partition", Aliases: []string{"p"}, Value: -1, Usage: "`PARTITION` (required)"},
					&cli.Int64Flag{Name: "producer-id", Value: -1, Usage: "`ID` of the producer whose transaction to abort (required)"},
				),
				Action: runTxnAbort,
			}),
		},
	}
}

func runTxnList(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": txn list takes no arguments"); err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	return k.ListTransactions(ctx, c.App.Writer, c.StringSlice("state"))
}

func runTxnDescribe(c *cli.Context) error {
	if c.NArg() != 1 {
		return errors.New("txn describe takes one argument: the transactional id")
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	return k.DescribeTransaction(ctx, c.App.Writer, c.Args().First())
}

func runTxnAbort(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": txn abort takes no arguments"); err != nil {
		return err
	}
	topic, partition, pid := c.String("topic"), c.Int("partition"), c.Int64("producer-id")
	switch {
	case topic == "":
		return errors.New("missing --topic (-t)")
	case partition < 0 || partition > 1<<31-1:
		return errors.New("missing --partition (-p): partitions are numbered from 0")
	case pid < 0:
		return errors.New("missing --producer-id")
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	first, err := k.AbortTransaction(ctx, topic, int32(partition), pid)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "aborted producer %d's transaction on %s-%d (from offset %d)\n", pid, topic, partition, first)
	return err
}
