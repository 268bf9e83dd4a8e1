package main

// skiff quota set|list|delete: client quotas, as kafka-configs.sh manages
// them; their operations are client's (client/quotas.go).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"skiff/client"
)

// quotaEntityFlags name what a quota is for.
func quotaEntityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "client-id", Usage: "the quota of client id `ID`"},
		// Not --user: that is the user the command logs in as (clientFlags).
		&cli.StringFlag{Name: "quota-user", Usage: "the quota of user `NAME` (with --client-id: of that client id of that user)"},
		&cli.BoolFlag{Name: "default", Usage: "the default client id: every client id without a quota of its own (with --quota-user: of that user)"},
		&cli.BoolFlag{Name: "default-user", Usage: "the default user: every user without a quota of its own"},
		&cli.StringFlag{Name: "ip", Usage: "the quota of the connections from ip address `ADDR` (connection_creation_rate only)"},
		&cli.BoolFlag{Name: "ip-default", Usage: "the default ip: every ip address without a quota of its own"},
	}
}

func quotaCommand() *cli.Command {
	return &cli.Command{
		Name:  "quota",
		Usage: "set, list and delete client quotas (byte rates and request time of users and client ids, connection rates of ips)",
		Subcommands: []*cli.Command{
			flagsAnywhere(&cli.Command{
				Name:  "set",
				Usage: "set quotas of a client id, a user, an ip, or their defaults",
				Description: "Sets the given quotas of the entity (its other quotas stay). Each node holds\n" +
					"a client over a quota to it by throttling it (docs/quotas.md). A user's quota\n" +
					"is shared by all its connections; a client id's by all clients with that id.\n" +
					"An ip's connection rate is its own on each node (--ip-default: each ip's).\n" +
					"Prints \"set quotas of ENTITY\".",
				HideHelpCommand: true,
				Flags: append(append(clientFlags(), quotaEntityFlags()...),
					&cli.Int64Flag{Name: "producer-byte-rate", Usage: "bytes `N` per second the entity may produce to each node"},
					&cli.Int64Flag{Name: "consumer-byte-rate", Usage: "bytes `N` per second the entity may fetch from each node"},
					&cli.Float64Flag{Name: "request-percentage", Usage: "percent `P` of one thread's time the entity's requests may take on each node"},
					&cli.Float64Flag{Name: "controller-mutation-rate", Usage: "partitions `N` per second the entity may create or delete through each node"},
					&cli.Int64Flag{Name: "connection-creation-rate", Usage: "connections `N` per second each node accepts from the ip (with --ip or --ip-default)"},
				),
				Action: runQuotaSet,
			}),
			flagsAnywhere(&cli.Command{
				Name:            "list",
				Aliases:         []string{"ls"},
				Usage:           "list the entities with quotas and their quotas",
				HideHelpCommand: true,
				Flags:           clientFlags(),
				Action:          runQuotaList,
			}),
			flagsAnywhere(&cli.Command{
				Name:            "delete",
				Usage:           "delete quotas of a client id, a user, or their defaults",
				Description:     "Deletes every quota of the entity, or only those of --quota.\nPrints \"deleted quotas of ENTITY\".",
				HideHelpCommand: true,
				Flags: append(append(clientFlags(), quotaEntityFlags()...),
					&cli.StringFlag{Name: "quota", Usage: "delete only the quotas `KEYS`, comma-separated: producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate"},
				),
				Action: runQuotaDelete,
			}),
		},
	}
}

func quotaEntity(c *cli.Context, cmd string) (client.QuotaEntity, error) {
	if err := unexpectedArgs(c, 0, ": skiff quota "+cmd+" takes flags only"); err != nil {
		return client.QuotaEntity{}, err
	}
	e := client.QuotaEntity{User: c.String("quota-user"), ClientID: c.String("client-id"),
		DefaultUser: c.Bool("default-user"), DefaultClientID: c.Bool("default"), IP: c.String("ip"), DefaultIP: c.Bool("ip-default")}
	for _, f := range []string{"quota-user", "client-id", "ip"} {
		if c.IsSet(f) && c.String(f) == "" {
			return e, fmt.Errorf("--%s: give a name (--default or --default-user for the default)", f)
		}
	}
	return e, e.Validate()
}

func runQuotaSet(c *cli.Context) error {
	e, err := quotaEntity(c, "set")
	if err != nil {
		return err
	}
	set := map[string]float64{}
	for flag, key := range map[string]string{"producer-byte-rate": client.ProducerByteRate, "consumer-byte-rate": client.ConsumerByteRate, "connection-creation-rate": client.ConnectionCreationRate} {
		if c.IsSet(flag) {
			if c.Int64(flag) <= 0 {
				return fmt.Errorf("--%s %d: must be at least 1", flag, c.Int64(flag))
			}
			set[key] = float64(c.Int64(flag))
		}
	}
	for flag, key := range map[string]string{"request-percentage": client.RequestPercentage, "controller-mutation-rate": client.ControllerMutationRate} {
		if c.IsSet(flag) {
			if p := c.Float64(flag); !(p > 0) {
				return fmt.Errorf("--%s %v: must be above 0", flag, p)
			}
			set[key] = c.Float64(flag)
		}
	}
	if len(set) == 0 {
		return fmt.Errorf("give at least one quota: --producer-byte-rate, --consumer-byte-rate, --request-percentage, --controller-mutation-rate or --connection-creation-rate")
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	if err := k.SetQuotas(ctx, e, set); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "set quotas of %s\n", e)
	return nil
}

func runQuotaList(c *cli.Context) error {
	if err := unexpectedArgs(c, 0, ": skiff quota list takes no arguments"); err != nil {
		return err
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	return k.ListQuotas(ctx, c.App.Writer)
}

func runQuotaDelete(c *cli.Context) error {
	e, err := quotaEntity(c, "delete")
	if err != nil {
		return err
	}
	var keys []string
	if q := c.String("quota"); q != "" {
		for _, key := range strings.Split(q, ",") {
			key = strings.TrimSpace(key)
			known := false
			all := append(slices.Clone(client.QuotaKeys), client.ConnectionCreationRate)
			for _, k := range all {
				known = known || k == key
			}
			if !known {
				return fmt.Errorf("--quota %s: not a quota; quotas are %s", key, strings.Join(all, ", "))
			}
			keys = append(keys, key)
		}
	}
	k, ctx, done, err := adminFromFlags(c)
	if err != nil {
		return err
	}
	defer done()
	if err := k.DeleteQuotas(ctx, e, keys); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "deleted quotas of %s\n", e)
	return nil
}
