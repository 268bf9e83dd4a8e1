package main

import (
	"io"

	"github.com/urfave/cli/v2"
)

// manCommand prints the skiff(1) man page in roff, rendered by urfave/cli from the
// commands and flags themselves, so it cannot fall behind them. The packages run it
// at build time (go run ./packaging); it is hidden from --help.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:   "man",
		Usage:  "print the skiff(1) man page (roff) for packagers",
		Hidden: true,
		Action: func(c *cli.Context) error {
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return err
			}
			_, err = io.WriteString(c.App.Writer, page)
			return err
		},
	}
}
