package main

import (
	"context"
	"fmt"
	"log/slog"
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
	for _, s := range serveSettings {
		usage := fmt.Sprintf("%s (env %s)", s.usage, envName(s.name))
		// Defaults are shown in the usage text but not set on the flag, so that
		// IsSet tells a flag given on the command line from one left alone.
		if s.def != "" {
			usage += fmt.Sprintf(" (default: %s)", s.def)
		}
		if s.kind == kindBool {
			flags = append(flags, &cli.BoolFlag{Name: s.name, Usage: usage})
			continue
		}
		flags = append(flags, &cli.StringFlag{Name: s.name, Usage: usage})
	}
	return &cli.Command{
		Name:  "serve",
		Usage: "run a Skiff node (with no settings: a single-node cluster in ./skiff-data on :9092)",
		Description: "Settings come from --config FILE, then flags, then SKIFF_* environment variables,\n" +
			"each overriding the one before.",
		Flags:  flags,
		Action: runServe,
	}
}

func runServe(c *cli.Context) error {
	var file settingValues
	if path := c.String("config"); path != "" {
		var err error
		if file, err = readConfigFile(path); err != nil {
			return err
		}
	}
	vals, err := resolveSettings(file, func(name string) (string, bool) {
		if settingByName(name).kind == kindBool {
			return strconv.FormatBool(c.Bool(name)), c.IsSet(name)
		}
		return c.String(name), c.IsSet(name)
	})
	if err != nil {
		return err
	}
	logger, err := newLogger(vals.str("log-level"), vals.str("log-format"))
	if err != nil {
		return err
	}
	cfg := appliance.Config{
		DataDir:                      vals.str("data-dir"),
		Listen:                       vals.str("listen"),
		Advertise:                    vals.str("advertise"),
		EtcdClient:                   vals.str("etcd-client"),
		EtcdPeer:                     vals.str("etcd-peer"),
		HTTP:                         vals.str("http"),
		Pprof:                        vals.bool("pprof"),
		NodeName:                     vals.str("node-name"),
		Bootstrap:                    vals.bool("bootstrap"),
		Join:                         splitList(vals.str("join")),
		JoinTimeout:                  vals.duration("join-timeout"),
		ForceNewCluster:              vals.bool("force-new-cluster"),
		Rack:                         vals.str("rack"),
		DisableAutoLeaderRebalance:   !vals.bool("auto-leader-rebalance"),
		LeaderImbalanceCheckInterval: vals.duration("leader-imbalance-check-interval"),
		SessionTimeout:               vals.duration("session-timeout"),
		ReplicaLagMax:                vals.duration("replica-lag-time-max"),
		EtcdAdvertiseClient:          vals.str("etcd-advertise-client"),
		EtcdAdvertisePeer:            vals.str("etcd-advertise-peer"),
		AutoCreateTopics:             vals.bool("auto-create-topics"),
		DefaultPartitions:            int32(vals.int("num-partitions")),
		DefaultReplicationFactor:     int16(vals.int("default-replication-factor")),
		MaxRequestBytes:              int32(vals.int("socket-request-max-bytes")),
		IdleTimeout:                  vals.duration("connections-max-idle"),
		ReadTimeout:                  vals.duration("socket-read-timeout"),
		MaxConnections:               int(vals.int("max-connections")),
		MaxConnectionsPerIP:          int(vals.int("max-connections-per-ip")),
		QueuedMaxRequestBytes:        vals.int("queued-max-request-bytes"),
		MaxPartitionsPerRequest:      int(vals.int("max-partitions-per-request")),
		RetentionCheckInterval:       vals.duration("log-retention-check-interval"),
		FlushPolicy:                  vals.str("flush-policy"),
		FlushInterval:                vals.duration("flush-interval"),
		ShutdownTimeout:              vals.duration("shutdown-timeout"),
		Groups:                       groupConfig(vals),
		Version:                      version,
		Logger:                       logger,
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	memLimit := setMemoryLimit(cfg.QueuedMaxRequestBytes, os.Getenv("GOMEMLIMIT"))

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
		logger.Info("skiff is ready", "kafka", node.KafkaAddr(), "http", node.HTTPAddr(), "data_dir", cfg.DataDir, "node_id", node.ID(), "memory_limit_mib", memLimit>>20)
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

// newLogger builds the node's structured logger: JSON when stderr is not a terminal
// or runs under journald (JOURNAL_STREAM set), human text on a terminal.
func newLogger(level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "auto":
		if os.Getenv("JOURNAL_STREAM") == "" && isTerminal(os.Stderr) {
			return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("log-format %q: use auto, json or text", format)
}

// splitList splits a comma-separated setting, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
