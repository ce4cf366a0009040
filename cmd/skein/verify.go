package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skein-log/skein/internal/verify"
)

func init() {
	commands["verify"] = command{
		summary: "run producers and consumers against a cluster under faults and check nothing acknowledged was lost",
		run:     clientCommand(runVerify),
	}
}

// Limits on a verify run, so that a mistyped flag cannot exhaust memory:
// the whole history is kept in memory to be checked.
const (
	maxVerifyDuration = 24 * time.Hour
	maxVerifySends    = 1_000_000
	maxVerifyEvents   = 8_000_000
	maxPartitions     = 100
	maxProducers      = 32
	maxConsumers      = 16
	maxRate           = 10_000
	localBrokers      = 3
)

// verifyConfig is a parsed `skein verify` command line.
type verifyConfig struct {
	duration          time.Duration
	seed              int64
	nemesis           []faultKind
	nemesisName       string
	acks              verify.Acks
	idempotent        bool
	partitions        int
	replicationFactor int
	minInsync         int
	producers         int
	consumers         int
	groupMembers      int    // consumers in one group, numbered after the assigned ones
	group             string // their group: <topic>-group
	rate              int    // records per second per producer
	out               string
	bootstrap         string // empty: start a local cluster
	compose           string // Compose project whose containers the faults hit (with bootstrap)
	port              int
	topic             string
	drainTimeout      time.Duration
	verbose           bool
	// bin is the skein binary the local brokers run (tests set it; the
	// command uses itself).
	bin string
}

func parseVerifyFlags(args []string, s streams, now time.Time) (*verifyConfig, error) {
	fs := newFlagSet("verify", s)
	cfg := &verifyConfig{}
	fs.DurationVar(&cfg.duration, "duration", 60*time.Second, "how long producers write while faults happen (then the cluster heals and consumers drain)")
	fs.Int64Var(&cfg.seed, "seed", 0, "seed of the fault schedule (default: from the clock; printed so a run can be repeated)")
	fs.StringVar(&cfg.nemesisName, "nemesis", "all", "faults: comma-separated kill (kill -9 and restart), pause (SIGSTOP/SIGCONT), restart (rolling, SIGTERM); or all, none")
	acks := fs.String("acks", "all", "producer acks: all, 1 or 0")
	fs.BoolVar(&cfg.idempotent, "idempotent", true, "idempotent producers (needs --acks all)")
	fs.IntVar(&cfg.partitions, "partitions", 3, "partitions of the topic")
	fs.IntVar(&cfg.replicationFactor, "replication-factor", 3, "replication factor of the topic")
	fs.IntVar(&cfg.minInsync, "min-insync-replicas", 2, "min.insync.replicas of the topic")
	fs.IntVar(&cfg.producers, "producers", 3, "producers, each with its own client")
	fs.IntVar(&cfg.consumers, "consumers", 2, "consumers, each assigned every partition from the beginning")
	fs.IntVar(&cfg.groupMembers, "group-members", 2, "consumers in one group (cooperative-sticky, committing after each poll), besides the assigned ones; 0 for none")
	fs.IntVar(&cfg.rate, "rate", 200, "records per second per producer")
	fs.StringVar(&cfg.out, "out", "", "directory for history.json, timeline.html, verdict.txt and the local cluster's data (default: a new temporary directory)")
	fs.StringVar(&cfg.bootstrap, "bootstrap-server", "", "run against this cluster instead of starting a local one (no faults then, unless --compose)")
	fs.StringVar(&cfg.compose, "compose", "", "Compose project of the --bootstrap-server cluster (deploy/docker-compose.yml): faults hit its containers with docker kill, pause, stop and network disconnect")
	fs.IntVar(&cfg.port, "port", 19092, "client port of local broker 1; broker N listens on port+100*(N-1), its controller on that +1")
	fs.StringVar(&cfg.topic, "topic", "", "topic to create (default: verify-<seed>-<time>); must not exist")
	fs.DurationVar(&cfg.drainTimeout, "drain-timeout", 60*time.Second, "how long consumers may take to read to the end after the faults")
	fs.BoolVar(&cfg.verbose, "v", false, "show the local brokers' logs on stderr (they always go to <out>/cluster/broker-N.log)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	switch verify.Acks(*acks) {
	case verify.AcksAll, verify.AcksLeader, verify.AcksNone:
		cfg.acks = verify.Acks(*acks)
	case "-1":
		cfg.acks = verify.AcksAll
	default:
		return nil, fmt.Errorf("--acks %q: want all, 1 or 0", *acks)
	}
	if cfg.acks != verify.AcksAll {
		// Kafka's idempotent producer needs acks=all; default to off rather
		// than refuse, unless it was asked for.
		if explicit["idempotent"] && cfg.idempotent {
			return nil, fmt.Errorf("--idempotent needs --acks all (got --acks %s)", cfg.acks)
		}
		cfg.idempotent = false
	}
	kinds, err := parseNemesis(cfg.nemesisName)
	if err != nil {
		return nil, err
	}
	cfg.nemesis = kinds
	switch {
	case cfg.compose != "" && cfg.bootstrap == "":
		return nil, errors.New("--compose needs --bootstrap-server: the Compose cluster's published addresses")
	case cfg.compose != "":
		// Only what the docker CLI can do; "all" (the default) means all of
		// that, a kind asked for by name that it cannot do is an error.
		var kept []faultKind
		for _, k := range kinds {
			if slices.Contains(composeFaults, k) {
				kept = append(kept, k)
			} else if explicit["nemesis"] && strings.Contains(","+cfg.nemesisName+",", ","+string(k)+",") {
				return nil, fmt.Errorf("--nemesis %s is not available with --compose (available: %s)", k, joinKinds(composeFaults))
			}
		}
		cfg.nemesis = kept
		if !explicit["nemesis"] {
			cfg.nemesisName = joinKinds(kept)
		}
	case cfg.bootstrap != "":
		if explicit["nemesis"] && len(kinds) > 0 {
			return nil, errors.New("--nemesis needs the local cluster or --compose: faults are not inflicted on a cluster given by --bootstrap-server alone")
		}
		cfg.nemesis, cfg.nemesisName = nil, "none"
	}
	if cfg.seed == 0 {
		cfg.seed = now.UnixNano()%1_000_000 + 1 // short enough to type again
	}
	if cfg.topic == "" {
		cfg.topic = fmt.Sprintf("verify-%d-%d", cfg.seed, now.Unix())
	}
	cfg.group = cfg.topic + "-group"
	return cfg, cfg.validate()
}

// joinKinds lists fault kinds comma-separated.
func joinKinds(kinds []faultKind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ",")
}

func (c *verifyConfig) validate() error {
	switch {
	case c.duration < time.Second || c.duration > maxVerifyDuration:
		return fmt.Errorf("--duration %v: want between 1s and %v", c.duration, maxVerifyDuration)
	case c.partitions < 1 || c.partitions > maxPartitions:
		return fmt.Errorf("--partitions %d: want 1 to %d", c.partitions, maxPartitions)
	case c.producers < 1 || c.producers > maxProducers:
		return fmt.Errorf("--producers %d: want 1 to %d", c.producers, maxProducers)
	case c.consumers < 1 || c.consumers > maxConsumers:
		return fmt.Errorf("--consumers %d: want 1 to %d", c.consumers, maxConsumers)
	case c.groupMembers < 0 || c.groupMembers > maxConsumers:
		return fmt.Errorf("--group-members %d: want 0 to %d", c.groupMembers, maxConsumers)
	case c.rate < 1 || c.rate > maxRate:
		return fmt.Errorf("--rate %d: want 1 to %d records per second per producer", c.rate, maxRate)
	case c.replicationFactor < 1 || (c.bootstrap == "" && c.replicationFactor > localBrokers):
		return fmt.Errorf("--replication-factor %d: want 1 to %d", c.replicationFactor, localBrokers)
	case c.minInsync < 1 || c.minInsync > c.replicationFactor:
		return fmt.Errorf("--min-insync-replicas %d: want 1 to the replication factor (%d)", c.minInsync, c.replicationFactor)
	case c.drainTimeout < time.Second || c.drainTimeout > time.Hour:
		return fmt.Errorf("--drain-timeout %v: want between 1s and 1h", c.drainTimeout)
	case c.bootstrap == "" && (c.port < 1024 || c.port+100*(localBrokers-1)+1 > 65535):
		return fmt.Errorf("--port %d: want 1024 to %d", c.port, 65535-100*(localBrokers-1)-1)
	}
	if sends := int64(c.rate) * int64(c.producers) * int64(c.duration/time.Second); sends > maxVerifySends {
		return fmt.Errorf("--rate %d x --producers %d x --duration %v is %d records; at most %d fit in memory to be checked: lower --rate",
			c.rate, c.producers, c.duration, sends, maxVerifySends)
	}
	return nil
}

func runVerify(ctx context.Context, args []string, s streams) error {
	cfg, err := parseVerifyFlags(args, s, time.Now())
	if err != nil {
		return err
	}
	if cfg.bin == "" && cfg.bootstrap == "" {
		if cfg.bin, err = os.Executable(); err != nil {
			return fmt.Errorf("find the skein binary for the local brokers: %w", err)
		}
	}
	if cfg.out == "" {
		if cfg.out, err = os.MkdirTemp("", "skein-verify-"); err != nil {
			return fmt.Errorf("output directory: %w", err)
		}
	} else if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	h, err := runVerifyWorkload(ctx, cfg, s)
	if err != nil {
		return err
	}
	return reportVerify(cfg, h, s)
}

// reportVerify checks the history, writes it with the timeline and the
// verdict into the output directory, prints the verdict, and fails when
// the history is invalid.
func reportVerify(cfg *verifyConfig, h *verify.History, s streams) error {
	res := verify.Check(h)
	verdict := res.Verdict(h.Meta)
	write := func(name string, fill func(f *os.File) error) error {
		f, err := os.Create(filepath.Join(cfg.out, name))
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		if err := fill(f); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", name, err)
		}
		return f.Close()
	}
	if err := write("history.json", func(f *os.File) error { return verify.WriteJSON(f, h) }); err != nil {
		return err
	}
	if err := write("timeline.html", func(f *os.File) error { return verify.WriteTimeline(f, h, res) }); err != nil {
		return err
	}
	if err := write("verdict.txt", func(f *os.File) error { _, err := f.WriteString(verdict); return err }); err != nil {
		return err
	}
	fmt.Fprint(s.out, verdict)
	fmt.Fprintf(s.out, "history: %s\ntimeline: %s\n", filepath.Join(cfg.out, "history.json"), filepath.Join(cfg.out, "timeline.html"))
	if !res.Valid {
		return fmt.Errorf("INVALID: %d anomalies (see %s)", res.Anomalies(), filepath.Join(cfg.out, "verdict.txt"))
	}
	return nil
}
