package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/skein-log/skein/internal/chaos"
	"github.com/skein-log/skein/internal/verify"
)

func init() {
	commands["verify"] = command{
		summary: "run producers and consumers against a cluster under faults and check nothing acknowledged was lost",
		run:     clientCommand(runVerify),
	}
}

func parseVerifyFlags(args []string, s streams, now time.Time) (*chaos.Config, error) {
	fs := newFlagSet("skein verify", s)
	cfg := &chaos.Config{}
	fs.DurationVar(&cfg.Duration, "duration", 60*time.Second, "how long producers write while faults happen (then the cluster heals and consumers drain)")
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed of the fault schedule (default: from the clock; printed so a run can be repeated)")
	fs.StringVar(&cfg.NemesisName, "nemesis", "all", "faults: comma-separated kill (kill -9 and restart), pause (SIGSTOP/SIGCONT), restart (rolling, SIGTERM); partition-leader, partition-controller, partition-minority, partition-client, slow, corrupt, disk-full, reassign (move a partition's replicas, its leader's among them); or groups all, process, partition, network, disk, none")
	workload := fs.String("workload", "plain", "plain: idempotent (or not) producers, assigned consumers and a group; txn: transactional producers (some transactions aborted on purpose, chosen by the seed) and read_committed consumers, checked for all-or-nothing transactions")
	acks := fs.String("acks", "all", "producer acks: all, 1 or 0")
	fs.BoolVar(&cfg.Idempotent, "idempotent", true, "idempotent producers (needs --acks all)")
	fs.BoolVar(&cfg.ClientDebug, "client-debug", false, "with --workload txn: franz-go debug logs of the transactional clients in <out>/client-N.log, and goroutine dumps of this process and of each local broker (run with admin.pprof.enable) in <out>/unanswered-*.txt when a transaction's records go unanswered")
	fs.IntVar(&cfg.Partitions, "partitions", 3, "partitions of the topic")
	fs.IntVar(&cfg.ReplicationFactor, "replication-factor", 3, "replication factor of the topic")
	fs.IntVar(&cfg.MinInsync, "min-insync-replicas", 2, "min.insync.replicas of the topic")
	fs.IntVar(&cfg.Producers, "producers", 3, "producers, each with its own client")
	fs.IntVar(&cfg.Consumers, "consumers", 2, "consumers, each assigned every partition from the beginning")
	fs.IntVar(&cfg.GroupMembers, "group-members", 2, "consumers in one group (cooperative-sticky, committing after each poll), besides the assigned ones; 0 for none")
	fs.IntVar(&cfg.Transformers, "transformers", chaos.Transformers, "with --workload txn: transformers of the consume-transform-produce chain (a consumer group reading the topic read_committed and writing each record, transformed, to <topic>-out in transactions that commit the group's offsets; now and then one is fenced by its successor before it commits); 0 for none")
	fs.IntVar(&cfg.Rate, "rate", 200, "records per second per producer")
	fs.StringVar(&cfg.Out, "out", "", "directory for history.json, timeline.html, verdict.txt and the local cluster's data (default: a new temporary directory)")
	fs.StringVar(&cfg.Bootstrap, "bootstrap-server", "", "run against this cluster instead of starting a local one (no faults then, unless --compose)")
	commandConfig := fs.String("command-config", "", "Kafka client properties file securing the --bootstrap-server cluster's clients: security.protocol, ssl.truststore.location, ssl.keystore.location, sasl.mechanism, sasl.jaas.config (or sasl.username/sasl.password)")
	fs.StringVar(&cfg.Compose, "compose", "", "Compose project of the --bootstrap-server cluster (deploy/docker-compose.yml): faults hit its containers with docker kill, pause, stop and network disconnect")
	fs.IntVar(&cfg.Brokers, "brokers", chaos.LocalBrokers, "brokers of the local cluster (each a KRaft controller too)")
	fs.IntVar(&cfg.Port, "port", 19092, "client port of local broker 1; broker N listens on port+100*(N-1), its controller on that +1")
	fs.StringVar(&cfg.Topic, "topic", "", "topic to create (default: verify-<seed>-<time>); must not exist")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", 60*time.Second, "how long consumers may take to read to the end after the faults")
	verbose := fs.Bool("v", false, "show the local brokers' logs on stderr (they always go to <out>/cluster/broker-N.log)")
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
		cfg.Acks = verify.Acks(*acks)
	case "-1":
		cfg.Acks = verify.AcksAll
	default:
		return nil, fmt.Errorf("--acks %q: want all, 1 or 0", *acks)
	}
	if cfg.Acks != verify.AcksAll {
		// Kafka's idempotent producer needs acks=all; default to off rather
		// than refuse, unless it was asked for.
		if explicit["idempotent"] && cfg.Idempotent {
			return nil, fmt.Errorf("--idempotent needs --acks all (got --acks %s)", cfg.Acks)
		}
		cfg.Idempotent = false
	}
	switch *workload {
	case "plain":
		if explicit["transformers"] && cfg.Transformers > 0 {
			return nil, errors.New("--transformers needs --workload txn")
		}
		cfg.Transformers = 0
	case verify.WorkloadTxn:
		cfg.Workload = verify.WorkloadTxn
		if !explicit["group-members"] {
			cfg.GroupMembers = 0 // the txn workload has no group
		}
	default:
		return nil, fmt.Errorf("--workload %q: want plain or txn", *workload)
	}
	kinds, err := chaos.ParseNemesis(cfg.NemesisName)
	if err != nil {
		return nil, err
	}
	cfg.Nemesis = kinds
	switch {
	case cfg.Compose != "" && cfg.Bootstrap == "":
		return nil, errors.New("--compose needs --bootstrap-server: the Compose cluster's published addresses")
	case cfg.Compose != "":
		// Only what the docker CLI can do; "all" (the default) means all of
		// that, a kind asked for by name that it cannot do is an error.
		var kept []chaos.FaultKind
		for _, k := range kinds {
			if slices.Contains(chaos.ComposeFaults, k) {
				kept = append(kept, k)
			} else if explicit["nemesis"] && strings.Contains(","+cfg.NemesisName+",", ","+string(k)+",") {
				return nil, fmt.Errorf("--nemesis %s is not available with --compose (available: %s)", k, chaos.JoinKinds(chaos.ComposeFaults))
			}
		}
		cfg.Nemesis = kept
		if !explicit["nemesis"] {
			cfg.NemesisName = chaos.JoinKinds(kept)
		}
	case cfg.Bootstrap != "":
		if explicit["nemesis"] && len(kinds) > 0 {
			return nil, errors.New("--nemesis needs the local cluster or --compose: faults are not inflicted on a cluster given by --bootstrap-server alone")
		}
		cfg.Nemesis, cfg.NemesisName = nil, "none"
	}
	if *commandConfig != "" {
		if cfg.Bootstrap == "" {
			return nil, errors.New("--command-config needs --bootstrap-server: the local cluster is plaintext")
		}
		flags := &clusterFlags{bootstrap: cfg.Bootstrap, commandConfig: *commandConfig}
		opts, err := flags.opts()
		if err != nil {
			return nil, err
		}
		cfg.ClientOpts = opts[1:] // the security; chaos adds the seeds
	}
	if cfg.Seed == 0 {
		cfg.Seed = now.UnixNano()%1_000_000 + 1 // short enough to type again
	}
	if cfg.Topic == "" {
		cfg.Topic = fmt.Sprintf("verify-%d-%d", cfg.Seed, now.Unix())
	}
	cfg.Group = cfg.Topic + "-group"
	if cfg.Transformers > 0 {
		cfg.ChainGroup, cfg.OutputTopic = cfg.Topic+"-chain", cfg.Topic+"-out"
	}
	if *verbose {
		cfg.BrokerOutput = s.err
	}
	return cfg, cfg.Validate()
}

func runVerify(ctx context.Context, args []string, s streams) error {
	cfg, err := parseVerifyFlags(args, s, time.Now())
	if err != nil {
		return err
	}
	if cfg.Bin == "" && cfg.Bootstrap == "" {
		if cfg.Bin, err = os.Executable(); err != nil {
			return fmt.Errorf("find the skein binary for the local brokers: %w", err)
		}
	}
	if cfg.Out == "" {
		if cfg.Out, err = os.MkdirTemp("", "skein-verify-"); err != nil {
			return fmt.Errorf("output directory: %w", err)
		}
	} else if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	h, err := chaos.Run(ctx, cfg, s.err)
	if err != nil {
		return err
	}
	return chaos.Report(cfg, h, s.out)
}
