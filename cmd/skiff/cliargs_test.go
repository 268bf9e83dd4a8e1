package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestHoistFlags(t *testing.T) {
	flags := []cli.Flag{
		&cli.IntFlag{Name: "partitions", Aliases: []string{"p"}},
		&cli.BoolFlag{Name: "if-not-exists"},
		&cli.StringFlag{Name: "brokers", Aliases: []string{"b"}},
	}
	for _, tc := range []struct {
		in    string
		want  string
		moved bool
	}{
		{"NAME", "-- NAME", false},
		{"--partitions 3 NAME", "--partitions 3 -- NAME", false},
		{"NAME --partitions 3", "--partitions 3 -- NAME", true},
		{"NAME -p 3 --if-not-exists -b h:1", "-p 3 --if-not-exists -b h:1 -- NAME", true},
		{"NAME --partitions=3 X", "--partitions=3 -- NAME X", true},
		{"NAME --if-not-exists X", "--if-not-exists -- NAME X", true},
		{"NAME -- --partitions 3", "-- NAME --partitions 3", true},
		{"-- NAME --partitions 3", "-- NAME --partitions 3", false},
		{"- NAME", "-- - NAME", false},
		{"NAME --unknown", "--unknown -- NAME", true},
		{"NAME --partitions", "--partitions -- NAME", true},
	} {
		got, moved := hoistFlags(strings.Fields(tc.in), flags)
		if strings.Join(got, " ") != tc.want || moved != tc.moved {
			t.Errorf("hoistFlags(%q) = %q, %v; want %q, %v", tc.in, strings.Join(got, " "), moved, tc.want, tc.moved)
		}
	}
}

// TestFlagsAnywhere runs a command wrapped by flagsAnywhere inside a real app
// and checks what its action sees.
func TestFlagsAnywhere(t *testing.T) {
	type seen struct {
		args       []string
		partitions int
		brokers    string
		configs    []string
	}
	run := func(args ...string) (seen, error) {
		var s seen
		cmd := flagsAnywhere(&cli.Command{
			Name:            "create",
			HideHelpCommand: true,
			Flags: append(clientFlags(),
				&cli.IntFlag{Name: "partitions", Aliases: []string{"p"}, Value: -1},
				&cli.GenericFlag{Name: "config", Value: &configList{}},
			),
			Action: func(c *cli.Context) error {
				s = seen{
					args:       c.Args().Slice(),
					partitions: c.Int("partitions"),
					brokers:    c.String("brokers"),
					configs:    slices.Clone(c.Generic("config").(*configList).values),
				}
				return nil
			},
		})
		app := &cli.App{
			Name:           "skiff",
			Writer:         new(bytes.Buffer),
			ErrWriter:      new(bytes.Buffer),
			ExitErrHandler: func(*cli.Context, error) {},
			Commands:       []*cli.Command{{Name: "topic", Subcommands: []*cli.Command{cmd}}},
		}
		err := app.Run(append([]string{"skiff", "topic", "create"}, args...))
		return s, err
	}

	for _, tc := range []struct {
		args []string
		want seen
	}{
		{[]string{"T"}, seen{[]string{"T"}, -1, defaultBrokers, nil}},
		{[]string{"-p", "3", "T"}, seen{[]string{"T"}, 3, defaultBrokers, nil}},
		{[]string{"T", "--partitions", "3"}, seen{[]string{"T"}, 3, defaultBrokers, nil}},
		{[]string{"-b", "x:1", "T", "-p", "2", "--config", "a=1", "--config", "b=2,3"},
			seen{[]string{"T"}, 2, "x:1", []string{"a=1", "b=2,3"}}},
		{[]string{"--config", "a=1", "T", "--config", "b=2"}, seen{[]string{"T"}, -1, defaultBrokers, []string{"a=1", "b=2"}}},
		{[]string{"T", "--", "-p"}, seen{[]string{"T", "-p"}, -1, defaultBrokers, nil}},
	} {
		got, err := run(tc.args...)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q: action saw %+v; want %+v", tc.args, got, tc.want)
		}
	}

	if _, err := run("T", "--nope"); err == nil || !strings.Contains(err.Error(), "flag provided but not defined: -nope") {
		t.Errorf("unknown flag after argument: err = %v", err)
	}
}
