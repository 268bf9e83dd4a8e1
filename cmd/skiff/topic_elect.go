package main

// skiff topic elect-leaders: leader elections on demand (ElectLeaders); the
// operation is client's (client/elect.go).

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func topicElectLeadersCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "elect-leaders",
		Usage:     "move leadership back to preferred replicas, or elect a leader uncleanly",
		ArgsUsage: "[NAME]",
		Description: "Asks the controller for leader elections of topic NAME's partitions, or of every\n" +
			"partition without NAME (ElectLeaders, as kafka-leader-election.sh). A preferred\n" +
			"election makes each partition's first replica its leader if it is in sync; the\n" +
			"controller also does that by itself every leader-imbalance-check-interval.\n" +
			"--unclean elects a leader for partitions that have none, from any live replica:\n" +
			"records that only the lost in-sync replicas had are gone. Prints one line per\n" +
			"partition; fails if an election failed.",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "unclean", Usage: "elect any live replica of a partition without a leader (may lose records)"},
		),
		Action: runTopicElectLeaders,
	})
}

func runTopicElectLeaders(c *cli.Context) error {
	if c.Args().Len() > 1 {
		return fmt.Errorf("unexpected argument %q: give at most one topic name", c.Args().Get(1))
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	return k.ElectLeaders(ctx, c.App.Writer, c.Args().First(), c.Bool("unclean"))
}
