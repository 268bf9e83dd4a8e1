package main

// skiff topic reassign: move partition replicas between nodes
// (AlterPartitionReassignments) with kafka-reassign-partitions.sh's JSON plans;
// the operations are client's (client/reassign.go).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"skiff/client"
)

func topicReassignCommand() *cli.Command {
	return flagsAnywhere(&cli.Command{
		Name:      "reassign",
		Usage:     "move partition replicas between nodes with a JSON plan",
		ArgsUsage: "PLAN.json | - | --generate TOPIC... | --list | --cancel PLAN.json | --cancel-all",
		Description: "Moves the replicas of each partition in the plan (the JSON of\n" +
			"kafka-reassign-partitions.sh: {\"version\":1,\"partitions\":[{\"topic\":\"orders\",\n" +
			"\"partition\":0,\"replicas\":[2,3]}]}, from a file or - for stdin). The controller\n" +
			"adds the new replicas first, waits until they are in sync, moves leadership if\n" +
			"needed, then removes the old ones; producers and consumers keep running.\n" +
			"--generate TOPIC... prints a plan that spreads those topics' replicas and leaders\n" +
			"evenly over the nodes of --to (default: every live node). --list prints the\n" +
			"reassignments in progress.\n" +
			"--throttle BYTES/S limits the copying to that rate per node: it sets\n" +
			"leader/follower.replication.throttled.rate on every node and the moved topics'\n" +
			"leader/follower.replication.throttled.replicas, as kafka-reassign-partitions.sh\n" +
			"does. --verify PLAN.json says which moves are done and, once all are, clears the\n" +
			"throttle (run it until it does: a throttle left in place slows later moves).\n" +
			"--cancel PLAN.json stops the moves of the plan still in progress (each partition\n" +
			"goes back to its replicas from before) and clears the throttle, as\n" +
			"kafka-reassign-partitions.sh --cancel does; --cancel-all stops every move.",
		HideHelpCommand: true,
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "generate", Usage: "print a balanced plan for the topics named instead of moving anything"},
			&cli.StringFlag{Name: "to", Usage: "with --generate, the node `IDS` to place replicas on (comma-separated)"},
			&cli.BoolFlag{Name: "list", Usage: "print the reassignments in progress"},
			&cli.Int64Flag{Name: "throttle", Usage: "copy at most `BYTES` per second per node while moving"},
			&cli.BoolFlag{Name: "verify", Usage: "say which moves of the plan are done; clear the throttle when all are"},
			&cli.BoolFlag{Name: "cancel", Usage: "stop the moves of the plan still in progress and clear the throttle"},
			&cli.BoolFlag{Name: "cancel-all", Usage: "stop every move in progress and clear the throttle"},
		),
		Action: runTopicReassign,
	})
}

func runTopicReassign(c *cli.Context) error {
	var to []int32
	if s := c.String("to"); s != "" {
		for _, f := range strings.Split(s, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil || id < 0 {
				return fmt.Errorf("--to: %q is not a node id", f)
			}
			to = append(to, int32(id))
		}
	}
	generate, list := c.Bool("generate"), c.Bool("list")
	cancelPlan, cancelAll := c.Bool("cancel"), c.Bool("cancel-all")
	modes := 0
	for _, on := range []bool{generate, list, cancelPlan, cancelAll, c.Bool("verify"), c.IsSet("throttle")} {
		if on {
			modes++
		}
	}
	switch {
	case (cancelPlan || cancelAll) && modes > 1:
		return errors.New("--cancel and --cancel-all go with no other mode")
	case cancelAll && c.Args().Len() > 0:
		return fmt.Errorf("unexpected argument %q: --cancel-all takes none", c.Args().First())
	case generate && list:
		return errors.New("give --generate or --list, not both")
	case generate && c.Args().Len() == 0:
		return errors.New("--generate needs the topics to move: skiff topic reassign --generate TOPIC...")
	case list && c.Args().Len() > 0:
		return fmt.Errorf("unexpected argument %q: --list takes none", c.Args().First())
	case !generate && !list && !cancelAll && c.Args().Len() != 1:
		return errors.New("give the plan: skiff topic reassign PLAN.json (or - for stdin)")
	case !generate && len(to) > 0:
		return errors.New("--to goes with --generate")
	case c.IsSet("throttle") && (c.Int64("throttle") < 1 || generate || list || c.Bool("verify")):
		return errors.New("--throttle takes a rate of 1 or more bytes per second, with a plan to carry out")
	case c.Bool("verify") && (generate || list):
		return errors.New("--verify goes with a plan")
	}
	var plan client.ReassignmentPlan
	if !generate && !list && !cancelAll {
		var in io.Reader = c.App.Reader
		if name := c.Args().First(); name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		var err error
		if plan, err = client.ParseReassignmentPlan(in); err != nil {
			return err
		}
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	switch {
	case list:
		return k.ListReassignments(ctx, c.App.Writer)
	case cancelAll:
		return k.CancelReassignment(ctx, c.App.Writer, nil)
	case cancelPlan:
		return k.CancelReassignment(ctx, c.App.Writer, &plan)
	case generate:
		plan, err := k.GenerateReassignment(ctx, c.Args().Slice(), to)
		if err != nil {
			return err
		}
		return client.WritePlan(c.App.Writer, plan)
	}
	if c.Bool("verify") {
		if _, err := k.VerifyReassignment(ctx, c.App.Writer, plan); err != nil {
			return err
		}
		return nil
	}
	if rate := c.Int64("throttle"); rate > 0 {
		if err := k.ThrottleReassignment(ctx, plan, rate); err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "throttled to %d bytes/s; run skiff topic reassign --verify with the plan to clear it once done\n", rate)
	}
	return k.Reassign(ctx, c.App.Writer, plan)
}
