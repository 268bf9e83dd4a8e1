package main

//go:generate go test . -run ^TestPackagedConfigFile$ -update

// skiff serve: its flags come from the settings table (appliance/settings.go);
// their values, with the YAML file and SKIFF_* variables, are resolved by
// appliance (settings_sources.go).

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"skiff/appliance"
	"skiff/systemd"
)

func serveCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "read settings from this YAML `FILE` (keys are the flag names)", EnvVars: []string{"SKIFF_CONFIG"}},
	}
	defaults := map[string]string{}
	for _, s := range new(appliance.Config).Settings() {
		defaults[s.Name] = s.Default()
		usage := s.Doc
		if s.Kafka != "" {
			usage += " (" + s.Kafka + ")"
		}
		usage += fmt.Sprintf(" (env %s)", appliance.EnvName(s.Name))
		// Defaults are shown in the usage text but not set on the flag, so that
		// IsSet tells a flag given on the command line from one left alone. The
		// man page leaves out a bool flag's DefaultText: it goes into the usage.
		if s.Kind() == appliance.KindBool {
			usage += " (default: " + s.Default() + ")"
			flags = append(flags, &cli.BoolFlag{Name: s.Name, Usage: usage, DisableDefaultText: true})
			continue
		}
		flags = append(flags, &cli.StringFlag{Name: s.Name, Usage: usage, DefaultText: s.Default()})
	}
	return &cli.Command{
		Name:  "serve",
		Usage: fmt.Sprintf("run a Skiff node (with no settings: a single-node cluster in %s on %s)", defaults["data-dir"], defaults["listen"]),
		Description: "Settings come from --config FILE, then flags, then SKIFF_* environment variables,\n" +
			"each overriding the one before.",
		Flags:  flags,
		Action: runServe,
	}
}

func runServe(c *cli.Context) error {
	var file map[string]string
	if path := c.String("config"); path != "" {
		var err error
		if file, err = appliance.ReadSettingsFile(path); err != nil {
			return err
		}
	}
	var cfg appliance.Config
	err := cfg.ResolveSettings(file, func(s appliance.Setting) (string, bool) {
		if s.Kind() == appliance.KindBool {
			return strconv.FormatBool(c.Bool(s.Name)), c.IsSet(s.Name)
		}
		return c.String(s.Name), c.IsSet(s.Name)
	})
	if err != nil {
		return err
	}
	logger, err := appliance.NewLogger(os.Stderr, cfg.LogLevel, cfg.LogFormat, isTerminal(os.Stderr))
	if err != nil {
		return err
	}
	cfg.Version, cfg.Logger = version, logger
	if err := cfg.Validate(); err != nil {
		return err
	}
	memLimit := appliance.SetMemoryLimit(cfg.QueuedMaxRequestBytes, cfg.CleanerDedupeBufferSize, os.Getenv("GOMEMLIMIT"))

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	// systemd (Type=notify): STATUS= while starting, READY=1 once serving, a watchdog
	// fed by the readiness check, STOPPING=1 before the shutdown. Outside systemd: nothing.
	sd := systemd.NewNotifier(logger)
	sd.Status("starting")
	cfg.OnStatus = sd.Status
	cfg.OnSecureFormed = func(f appliance.SecureFormed) { f.Print(c.App.Writer) }
	node, err := appliance.Start(ctx, cfg)
	if err != nil {
		return err
	}
	go func() {
		// A first signal stops the start or drains; a second exits at once.
		<-sigs
		logger.Info("stopping: draining in-flight requests (a second signal exits at once)")
		cancel()
		<-sigs
		logger.Warn("second signal: exiting at once")
		os.Exit(1)
	}()
	select {
	case <-node.Ready():
		logger.Info("skiff is ready", "kafka", node.KafkaAddr(), "listeners", strings.Join(node.ListenerAddrs(), ","), "http", node.HTTPAddr(), "data_dir", cfg.DataDir, "node_id", node.ID(), "memory_limit_mib", memLimit>>20)
		status := fmt.Sprintf("ready: Kafka on %s, HTTP on %s, data in %s", node.KafkaAddr(), node.HTTPAddr(), cfg.DataDir)
		sd.Ready(status)
		sd.StartWatchdog(node.CheckAlive, status)
		select {
		case <-ctx.Done():
		case err = <-node.Err():
			logger.Error("node failed", "err", err)
		}
	case <-ctx.Done():
	case err = <-node.Err():
	}
	sd.Stopping("stopping: draining in-flight requests, closing the node")
	if cerr := node.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
