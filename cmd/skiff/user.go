package main

// skiff user create|list|delete: SCRAM users, as kafka-configs.sh manages them;
// their operations are client's (client/users.go).

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/urfave/cli/v2"

	"skiff/client"
)

// defaultScramIterations is what skiff user create salts passwords with:
// twice Kafka's minimum, a few milliseconds per login on each side.
const defaultScramIterations = 8192

func userCommand() *cli.Command {
	return &cli.Command{
		Name:  "user",
		Usage: "create, list and delete SASL/SCRAM users",
		Subcommands: []*cli.Command{
			flagsAnywhere(&cli.Command{
				Name:      "create",
				Usage:     "create a user, or give it a new password",
				ArgsUsage: "NAME",
				Description: "Reads the password from the first line of standard input (--password-stdin:\n" +
					"a flag value would show in the process list) and stores its SCRAM credential\n" +
					"for each --mechanism; an existing user gets the new password. Prints\n" +
					"\"created user NAME (MECHANISMS)\".",
				HideHelpCommand: true,
				Flags: append(clientFlags(),
					&cli.StringFlag{Name: "mechanism", Value: "SCRAM-SHA-512", Usage: "SCRAM `MECHANISMS` to store the password for, comma-separated: SCRAM-SHA-512, SCRAM-SHA-256"},
					&cli.IntFlag{Name: "iterations", Value: defaultScramIterations, Usage: "SCRAM iterations `N` (4096 to 16384)"},
					&cli.BoolFlag{Name: "password-stdin", Usage: "read the new user's password from standard input (required)"},
				),
				Action: runUserCreate,
			}),
			flagsAnywhere(&cli.Command{
				Name:            "list",
				Aliases:         []string{"ls"},
				Usage:           "list users and their SCRAM mechanisms",
				HideHelpCommand: true,
				Flags:           clientFlags(),
				Action:          runUserList,
			}),
			flagsAnywhere(&cli.Command{
				Name:            "delete",
				Usage:           "delete a user's SCRAM credentials",
				ArgsUsage:       "NAME",
				Description:     "Deletes every credential of NAME, or only those of --mechanism. Open\nconnections of the user stay until they close or re-authenticate.",
				HideHelpCommand: true,
				Flags: append(clientFlags(),
					&cli.StringFlag{Name: "mechanism", Usage: "delete only the credentials of `MECHANISMS`, comma-separated"},
				),
				Action: runUserDelete,
			}),
		},
	}
}

func runUserCreate(c *cli.Context) error {
	name, err := nameArg(c, "user")
	if err != nil {
		return err
	}
	mechs, err := client.ParseScramMechanisms(c.String("mechanism"))
	if err != nil {
		return err
	}
	if !c.Bool("password-stdin") {
		return errors.New("give the password on standard input with --password-stdin (a flag value would show in the process list)")
	}
	password, err := client.ReadPassword(c.App.Reader)
	if err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	if err := k.CreateUser(ctx, client.UserSpec{Name: name, Mechanisms: mechs, Iterations: int32(c.Int("iterations")), Password: password}); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "created user %s (%s)\n", name, client.MechanismNames(mechs, ", "))
	return nil
}

func runUserList(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": skiff user list takes no arguments"); err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	return k.ListUsers(ctx, c.App.Writer)
}

func runUserDelete(c *cli.Context) error {
	name, err := nameArg(c, "user")
	if err != nil {
		return err
	}
	var only []kadm.ScramMechanism
	if m := c.String("mechanism"); m != "" {
		if only, err = client.ParseScramMechanisms(m); err != nil {
			return err
		}
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	deleted, err := k.DeleteUser(ctx, name, only)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "deleted user %s (%s)\n", name, client.MechanismNames(deleted, ", "))
	return nil
}
