package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsAnywhere lets cmd take flags after its positional arguments, so that
// `skiff topic create NAME --partitions 3` means what it says. urfave/cli v2,
// like Go's flag package, stops reading flags at the first argument and would
// otherwise pass "--partitions" and "3" on as arguments.
//
// When flags follow an argument, the command is run once more with its
// arguments reordered: flags first, then "--", then the positional arguments
// in their original order. Everything after a "--" typed by the user stays
// positional.
func flagsAnywhere(cmd *cli.Command) *cli.Command {
	action := cmd.Action
	rerun := false
	cmd.Action = func(c *cli.Context) error {
		lineage := c.Lineage()
		if rerun || len(lineage) < 2 {
			return action(c)
		}
		parent := lineage[1]
		// The parent's arguments are this command's name followed by
		// everything typed after it.
		raw := parent.Args().Slice()
		if len(raw) == 0 {
			return action(c)
		}
		args, moved := hoistFlags(raw[1:], cmd.Flags)
		if !moved {
			return action(c)
		}
		rerun = true
		defer func() { rerun = false }()
		resetRepeatable(cmd.Flags)
		nc := cli.NewContext(c.App, nil, parent)
		nc.Command = cmd
		return cmd.Run(nc, append([]string{raw[0]}, args...)...)
	}
	return cmd
}

// hoistFlags moves flags (with their values) in front of the positional
// arguments. moved reports whether any flag, or a "--", followed a positional
// argument.
func hoistFlags(args []string, flags []cli.Flag) (out []string, moved bool) {
	var fl, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			// Go's flag package keeps a "--" that follows an argument;
			// reorder so that it is consumed as the end of flags.
			moved = moved || len(pos) > 0
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		if len(pos) > 0 {
			moved = true
		}
		fl = append(fl, a)
		if !strings.Contains(a, "=") && flagTakesValue(strings.TrimLeft(a, "-"), flags) && i+1 < len(args) {
			i++
			fl = append(fl, args[i])
		}
	}
	out = append(fl, "--")
	return append(out, pos...), moved
}

// flagTakesValue reports whether the flag named name reads the next argument
// as its value. Unknown names are left for the parser to refuse.
func flagTakesValue(name string, flags []cli.Flag) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			_, isBool := f.(*cli.BoolFlag)
			return !isBool
		}
	}
	return false
}

// repeatable is a flag value that accumulates, and so must be emptied before
// the arguments are parsed a second time.
type repeatable interface{ reset() }

func resetRepeatable(flags []cli.Flag) {
	for _, f := range flags {
		if g, ok := f.(*cli.GenericFlag); ok {
			if r, ok := g.Value.(repeatable); ok {
				r.reset()
			}
		}
	}
}
