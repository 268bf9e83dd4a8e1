package main

// skiff user create|list|delete: SCRAM users through the Kafka admin API
// (AlterUserScramCredentials, DescribeUserScramCredentials), as kafka-configs.sh
// manages them. The broker keeps a salted, iterated form of the password, never
// the password.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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

// userName is the one positional argument, a user name.
func userName(c *cli.Context) (string, error) {
	switch c.Args().Len() {
	case 0:
		return "", fmt.Errorf("missing user name: usage: skiff user %s NAME", c.Command.Name)
	case 1:
		if c.Args().First() == "" {
			return "", errors.New("user name must not be empty")
		}
		return c.Args().First(), nil
	}
	return "", fmt.Errorf("unexpected argument %q: give one user name", c.Args().Get(1))
}

// scramMechanisms reads a comma-separated list of SCRAM mechanisms.
func scramMechanisms(s string) ([]kadm.ScramMechanism, error) {
	var out []kadm.ScramMechanism
	for _, m := range strings.Split(s, ",") {
		switch strings.ToUpper(strings.TrimSpace(m)) {
		case "SCRAM-SHA-512":
			out = append(out, kadm.ScramSha512)
		case "SCRAM-SHA-256":
			out = append(out, kadm.ScramSha256)
		default:
			return nil, fmt.Errorf("--mechanism %q: want SCRAM-SHA-512 or SCRAM-SHA-256 (comma-separated)", m)
		}
	}
	return out, nil
}

// readPassword reads a password from the first line of r.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("the password on standard input is empty")
	}
	return line, nil
}

func runUserCreate(c *cli.Context) error {
	name, err := userName(c)
	if err != nil {
		return err
	}
	mechs, err := scramMechanisms(c.String("mechanism"))
	if err != nil {
		return err
	}
	if !c.Bool("password-stdin") {
		return errors.New("give the password on standard input with --password-stdin (a flag value would show in the process list)")
	}
	password, err := readPassword(c.App.Reader)
	if err != nil {
		return err
	}
	var ups []kadm.UpsertSCRAM
	var names []string
	for _, m := range mechs {
		ups = append(ups, kadm.UpsertSCRAM{User: name, Mechanism: m, Iterations: int32(c.Int("iterations")), Password: password})
		names = append(names, m.String())
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	res, err := k.Admin().AlterUserSCRAMs(ctx, nil, ups)
	if err != nil {
		return fmt.Errorf("create user %q: %w", name, k.Explain(err))
	}
	if r := res[name]; r.Err != nil {
		return fmt.Errorf("create user %q: %w%s", name, r.Err, client.BrokerSays(r.ErrMessage))
	}
	fmt.Fprintf(c.App.Writer, "created user %s (%s)\n", name, strings.Join(names, ", "))
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
	users, err := k.Admin().DescribeUserSCRAMs(ctx)
	if err != nil {
		return fmt.Errorf("list users: %w", k.Explain(err))
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "USER\tMECHANISMS")
	for _, u := range users.Sorted() {
		var mechs []string
		for _, ci := range u.CredInfos {
			mechs = append(mechs, fmt.Sprintf("%s (%d iterations)", ci.Mechanism, ci.Iterations))
		}
		fmt.Fprintf(w, "%s\t%s\n", u.User, strings.Join(mechs, ", "))
	}
	return w.Flush()
}

func runUserDelete(c *cli.Context) error {
	name, err := userName(c)
	if err != nil {
		return err
	}
	var only []kadm.ScramMechanism
	if m := c.String("mechanism"); m != "" {
		if only, err = scramMechanisms(m); err != nil {
			return err
		}
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	if only == nil {
		described, err := k.Admin().DescribeUserSCRAMs(ctx, name)
		if err != nil {
			return fmt.Errorf("delete user %q: %w", name, k.Explain(err))
		}
		u := described[name]
		if errors.Is(u.Err, kerr.ResourceNotFound) {
			return fmt.Errorf("user %q does not exist", name)
		} else if u.Err != nil {
			return fmt.Errorf("delete user %q: %w%s", name, u.Err, client.BrokerSays(u.ErrMessage))
		}
		for _, ci := range u.CredInfos {
			only = append(only, ci.Mechanism)
		}
	}
	var dels []kadm.DeleteSCRAM
	var names []string
	for _, m := range only {
		dels = append(dels, kadm.DeleteSCRAM{User: name, Mechanism: m})
		names = append(names, m.String())
	}
	res, err := k.Admin().AlterUserSCRAMs(ctx, dels, nil)
	if err != nil {
		return fmt.Errorf("delete user %q: %w", name, k.Explain(err))
	}
	if r := res[name]; errors.Is(r.Err, kerr.ResourceNotFound) {
		return fmt.Errorf("user %q has no credential for %s", name, strings.Join(names, " or "))
	} else if r.Err != nil {
		return fmt.Errorf("delete user %q: %w%s", name, r.Err, client.BrokerSays(r.ErrMessage))
	}
	fmt.Fprintf(c.App.Writer, "deleted user %s (%s)\n", name, strings.Join(names, ", "))
	return nil
}
