package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/node"
)

func init() {
	commands["server"] = command{summary: "run a broker", run: runServer}
}

// overrideFlag collects repeated --override key=value flags.
type overrideFlag map[string]string

func (o overrideFlag) String() string { return "" }
func (o overrideFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	o[strings.TrimSpace(k)] = strings.TrimSpace(val)
	return nil
}

func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	configPath := fs.String("config", "", "server.properties file (Kafka property names)")
	overrides := overrideFlag{}
	fs.Var(overrides, "override", "set a property, key=value (repeatable); wins over the file and SKEIN_* variables")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*configPath, os.Environ(), overrides)
	if err != nil {
		return err
	}
	logger := newLogger(cfg.LogFormat, cfg.LogLevel)
	// Caught from before the start: a Ctrl-C during recovery is a
	// controlled shutdown once the broker is up, not a kill mid-start.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	b := node.New(cfg, node.Options{Logger: logger})
	if err := b.Start(); err != nil {
		return err
	}
	select {
	case sig := <-sigs:
		logger.Info("shutting down", "signal", sig.String())
		return b.Close()
	case err := <-b.Fatal():
		// The node already stopped itself (a failed log directory or
		// metadata log); a non-zero exit tells the supervisor.
		return fmt.Errorf("broker stopped: %w", err)
	}
}

// newLogger is the process's logger. Lines of the node are filtered by
// the node's levels (log.level and the broker-logger levels changed at
// runtime, internal/loglevel), not by this handler's; the process's own
// lines by log.level.
func newLogger(format, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
