package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

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
		usage += fmt.Sprintf(" (env %s)", envName(s.Name))
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
		if file, err = readConfigFile(path); err != nil {
			return err
		}
	}
	var cfg appliance.Config
	err := resolveSettings(&cfg, file, func(s appliance.Setting) (string, bool) {
		if s.Kind() == appliance.KindBool {
			return strconv.FormatBool(c.Bool(s.Name)), c.IsSet(s.Name)
		}
		return c.String(s.Name), c.IsSet(s.Name)
	})
	if err != nil {
		return err
	}
	logger, err := newLogger(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	cfg.Version, cfg.Logger = version, logger
	if err := cfg.Validate(); err != nil {
		return err
	}
	memLimit := setMemoryLimit(cfg.QueuedMaxRequestBytes, cfg.CleanerDedupeBufferSize, os.Getenv("GOMEMLIMIT"))

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
	cfg.OnSecureFormed = func(f appliance.SecureFormed) { printSecureFormed(c.App.Writer, f) }
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

// printSecureFormed tells the operator of a new secure cluster where the admin
// password is and how the next nodes join (on stdout, not in the log: the token
// is a secret for as long as it lasts).
func printSecureFormed(w io.Writer, f appliance.SecureFormed) {
	fmt.Fprintf(w, "\nThe cluster was formed securely (CA fingerprint SHA-256 %s).\n", f.CAFingerprint)
	fmt.Fprintf(w, "The password of the super user %q is in %s (readable by this node's user only).\n", appliance.AdminUser, f.AdminPasswordFile)
	if f.JoinToken == "" {
		fmt.Fprintf(w, "No join token could be made: make one with `skiff cluster join-token --data-dir DIR` on this node.\n\n")
		return
	}
	fmt.Fprintf(w, "Join token, valid once until %s:\n\n  %s\n\n", f.JoinTokenExpires.UTC().Format(time.RFC3339), f.JoinToken)
	fmt.Fprintf(w, "Start each further node with:\n\n  skiff serve --join %s --join-token TOKEN\n\n", f.HTTPAddr)
	fmt.Fprintf(w, "Each token admits one node; `skiff cluster join-token --data-dir DIR` on a node makes another.\n\n")
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
