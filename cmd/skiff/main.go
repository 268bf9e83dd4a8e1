// Command skiff is the Skiff server (skiff serve) and its bundled Kafka client
// (topic, produce, consume, group, offsets, version; cluster and bench follow).
//
// Every failure ends with one message on stderr naming what went wrong and what to
// do, and exit status 1; never a Go stack.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	app := newApp()
	if err := app.Run(args); err != nil {
		var ec cli.ExitCoder
		if errors.As(err, &ec) && ec.ExitCode() == 0 {
			return 0
		}
		fmt.Fprintf(os.Stderr, "skiff: %v\n", err)
		return 1
	}
	return 0
}

func newApp() *cli.App {
	return &cli.App{
		Name:    "skiff",
		Usage:   "a Kafka-compatible message engine in one binary",
		Version: version,
		// Errors are printed once, by run, with exit status 1.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			serveCommand(),
			topicCommand(),
			configCommand(),
			produceCommand(),
			consumeCommand(),
			groupCommand(),
			txnCommand(),
			offsetsCommand(),
			userCommand(),
			quotaCommand(),
			aclCommand(),
			clusterCommand(),
			benchCommand(),
			versionCommand(),
			manCommand(),
		},
		EnableBashCompletion: true,
	}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version of this skiff binary",
		Action: func(c *cli.Context) error {
			fmt.Fprintf(c.App.Writer, "skiff %s\n", version)
			return nil
		},
	}
}
