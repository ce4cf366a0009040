// Package chaos is the experiment behind `skein verify`: a workload of
// producers, assigned consumers and a consumer group against a cluster,
// a seeded schedule of faults (processes killed, paused and restarted,
// network partitions and delays through fault proxies, damaged segments,
// full disks) on a local cluster of real broker processes or on a Compose
// cluster's containers, and a recorder of everything that happened. The
// history it returns is judged by internal/verify.
package chaos

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/verify"
)

// Limits on a run, so that a mistyped flag cannot exhaust memory: the
// whole history is kept in memory to be checked.
const (
	MaxDuration   = 24 * time.Hour
	MaxSends      = 1_000_000
	maxEvents     = 8_000_000
	MaxPartitions = 100
	MaxProducers  = 32
	MaxConsumers  = 16
	MaxRate       = 10_000
	// LocalBrokers is the default size of the local cluster (--brokers);
	// MaxLocalBrokers bounds it (each broker has its own loopback address
	// and ports 100 apart).
	LocalBrokers    = 3
	MaxLocalBrokers = 9
)

// Config is one experiment.
type Config struct {
	// Workload is "" (plain producers) or verify.WorkloadTxn.
	Workload          string
	Duration          time.Duration
	Seed              int64
	Nemesis           []FaultKind
	NemesisName       string
	Acks              verify.Acks
	Idempotent        bool
	Partitions        int
	ReplicationFactor int
	MinInsync         int
	Producers         int
	Consumers         int
	GroupMembers      int    // consumers in one group, numbered after the assigned ones
	Group             string // their group
	// Transformers of the txn workload's consume-transform-produce chain
	// (0: none), reading Topic in ChainGroup and writing OutputTopic.
	Transformers int
	ChainGroup   string
	OutputTopic  string
	Rate         int    // records per second per producer
	Out          string // directory of the report and the local cluster's data
	Bootstrap    string // empty: start a local cluster
	Compose      string // Compose project whose containers the faults hit (with Bootstrap)
	Port         int    // client port of local broker 1 (devcluster.BasePorts)
	Brokers      int    // size of the local cluster
	Topic        string
	DrainTimeout time.Duration
	// Bin is the skein binary the local brokers run.
	Bin string
	// BrokerOutput, when set, receives the local brokers' logs besides
	// their files.
	BrokerOutput io.Writer
	// ClientOpts secure every client of a --bootstrap-server cluster
	// (TLS, SASL: the CLI's --command-config).
	ClientOpts []kgo.Opt
	// ClientDebug: franz-go debug logs of the transactional clients and
	// goroutine dumps when a transaction goes unanswered (clientdebug.go).
	ClientDebug bool
	// adminAddrs are the local brokers' admin listeners (set once started).
	adminAddrs []string
}

// clientOpts are the options every client of the run starts from: the
// seeds, then the cluster's security.
func (c *Config) clientOpts(seeds []string) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, c.ClientOpts...)
}

// Validate checks the bounds of c.
func (c *Config) Validate() error {
	switch {
	case c.Duration < time.Second || c.Duration > MaxDuration:
		return fmt.Errorf("--duration %v: want between 1s and %v", c.Duration, MaxDuration)
	case c.Partitions < 1 || c.Partitions > MaxPartitions:
		return fmt.Errorf("--partitions %d: want 1 to %d", c.Partitions, MaxPartitions)
	case c.Producers < 1 || c.Producers > MaxProducers:
		return fmt.Errorf("--producers %d: want 1 to %d", c.Producers, MaxProducers)
	case c.Consumers < 1 || c.Consumers > MaxConsumers:
		return fmt.Errorf("--consumers %d: want 1 to %d", c.Consumers, MaxConsumers)
	case c.GroupMembers < 0 || c.GroupMembers > MaxConsumers:
		return fmt.Errorf("--group-members %d: want 0 to %d", c.GroupMembers, MaxConsumers)
	case c.Rate < 1 || c.Rate > MaxRate:
		return fmt.Errorf("--rate %d: want 1 to %d records per second per producer", c.Rate, MaxRate)
	case c.Bootstrap == "" && (c.Brokers < 1 || c.Brokers > MaxLocalBrokers):
		return fmt.Errorf("--brokers %d: want 1 to %d", c.Brokers, MaxLocalBrokers)
	case c.ReplicationFactor < 1 || (c.Bootstrap == "" && c.ReplicationFactor > c.Brokers):
		return fmt.Errorf("--replication-factor %d: want 1 to %d (--brokers)", c.ReplicationFactor, c.Brokers)
	case c.MinInsync < 1 || c.MinInsync > c.ReplicationFactor:
		return fmt.Errorf("--min-insync-replicas %d: want 1 to the replication factor (%d)", c.MinInsync, c.ReplicationFactor)
	case c.Workload != "" && c.Workload != verify.WorkloadTxn:
		return fmt.Errorf("--workload %q: want plain or txn", c.Workload)
	case c.Workload == verify.WorkloadTxn && (c.GroupMembers > 0 || !c.Idempotent || c.Acks != verify.AcksAll):
		return errors.New("--workload txn: transactional producers need --acks all and --idempotent, and the group members are not part of it (--group-members 0)")
	case c.Transformers < 0 || c.Transformers > MaxConsumers:
		return fmt.Errorf("--transformers %d: want 0 to %d", c.Transformers, MaxConsumers)
	case c.Transformers > 0 && c.Workload != verify.WorkloadTxn:
		return errors.New("--transformers: the consume-transform-produce chain is part of --workload txn")
	case c.Transformers > 0 && (c.ChainGroup == "" || c.OutputTopic == ""):
		return errors.New("the chain needs its group and output topic")
	case c.DrainTimeout < time.Second || c.DrainTimeout > time.Hour:
		return fmt.Errorf("--drain-timeout %v: want between 1s and 1h", c.DrainTimeout)
	case c.Bootstrap == "" && (c.Port < 1024 || c.Port+100*(c.Brokers-1)+2 > 65535):
		return fmt.Errorf("--port %d: want 1024 to %d", c.Port, 65535-100*(c.Brokers-1)-2)
	}
	if sends := int64(c.Rate) * int64(c.Producers) * int64(c.Duration/time.Second); sends > MaxSends {
		return fmt.Errorf("--rate %d x --producers %d x --duration %v is %d records; at most %d fit in memory to be checked: lower --rate",
			c.Rate, c.Producers, c.Duration, sends, MaxSends)
	}
	return nil
}

// Report checks the history, writes it with the timeline and the verdict
// into c.Out, prints the verdict to out, and fails when the history is
// invalid.
func Report(c *Config, h *verify.History, out io.Writer) error {
	check := verify.Check
	if h.Meta.Workload == verify.WorkloadTxn {
		check = verify.CheckTxn
	}
	res := check(h)
	verdict := res.Verdict(h.Meta)
	write := func(name string, fill func(f *os.File) error) error {
		f, err := os.Create(filepath.Join(c.Out, name))
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
	fmt.Fprint(out, verdict)
	fmt.Fprintf(out, "history: %s\ntimeline: %s\n", filepath.Join(c.Out, "history.json"), filepath.Join(c.Out, "timeline.html"))
	if !res.Valid {
		return fmt.Errorf("INVALID: %d anomalies (see %s)", res.Anomalies(), filepath.Join(c.Out, "verdict.txt"))
	}
	return nil
}

// seedList splits a comma-separated list, dropping empty items.
func seedList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
