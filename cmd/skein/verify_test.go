package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/chaos"
	"github.com/skein-log/skein/internal/verify"
)

var verifyNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestParseVerifyFlags(t *testing.T) {
	tests := []struct {
		args    []string
		check   func(c *chaos.Config) string // "" when fine
		wantErr string
	}{
		{args: nil, check: func(c *chaos.Config) string {
			if c.Duration != 60*time.Second || c.Acks != verify.AcksAll || !c.Idempotent || c.Partitions != 3 ||
				c.ReplicationFactor != 3 || c.MinInsync != 2 || !reflect.DeepEqual(c.Nemesis, chaos.AllFaults) || c.Seed == 0 || c.Topic == "" {
				return fmt.Sprintf("defaults: %+v", c)
			}
			return ""
		}},
		{args: []string{"--seed", "7", "--duration", "15s", "--nemesis", "kill,pause"}, check: func(c *chaos.Config) string {
			if c.Seed != 7 || c.Duration != 15*time.Second || !reflect.DeepEqual(c.Nemesis, []chaos.FaultKind{chaos.FaultKill, chaos.FaultPause}) || c.Topic != "verify-7-1767323045" {
				return fmt.Sprintf("%+v", c)
			}
			return ""
		}},
		{args: []string{"--acks", "1"}, check: func(c *chaos.Config) string {
			if c.Acks != verify.AcksLeader || c.Idempotent {
				return "acks=1 must turn idempotence off"
			}
			return ""
		}},
		{args: []string{"--workload", "txn"}, check: func(c *chaos.Config) string {
			if c.Workload != verify.WorkloadTxn || c.GroupMembers != 0 {
				return fmt.Sprintf("txn workload: %q with %d group members", c.Workload, c.GroupMembers)
			}
			if c.Transformers != chaos.Transformers || c.ChainGroup != c.Topic+"-chain" || c.OutputTopic != c.Topic+"-out" {
				return fmt.Sprintf("txn workload chain: %d transformers, group %q, output %q", c.Transformers, c.ChainGroup, c.OutputTopic)
			}
			return ""
		}},
		{args: []string{"--workload", "txn", "--transformers", "0"}, check: func(c *chaos.Config) string {
			if c.Transformers != 0 || c.OutputTopic != "" {
				return fmt.Sprintf("no chain asked for: %d transformers, output %q", c.Transformers, c.OutputTopic)
			}
			return ""
		}},
		{args: nil, check: func(c *chaos.Config) string {
			if c.Transformers != 0 {
				return "the plain workload has no chain"
			}
			return ""
		}},
		{args: []string{"--transformers", "2"}, wantErr: "--transformers needs --workload txn"},
		{args: []string{"--workload", "txn", "--transformers", "99"}, wantErr: "--transformers 99"},
		{args: []string{"--workload", "txn", "--acks", "1"}, wantErr: "--workload txn"},
		{args: []string{"--workload", "txn", "--group-members", "2"}, wantErr: "--group-members 0"},
		{args: []string{"--workload", "bank"}, wantErr: `--workload "bank"`},
		{args: []string{"--acks", "-1"}, check: func(c *chaos.Config) string {
			if c.Acks != verify.AcksAll {
				return "-1 means all"
			}
			return ""
		}},
		{args: []string{"--idempotent=false"}, check: func(c *chaos.Config) string {
			if c.Idempotent {
				return "idempotence stayed on"
			}
			return ""
		}},
		{args: []string{"--nemesis", "partition,kill,disk"}, check: func(c *chaos.Config) string {
			want := []chaos.FaultKind{chaos.FaultIsolateLeader, chaos.FaultIsolateController, chaos.FaultIsolateMinority, chaos.FaultCutClients, chaos.FaultKill, chaos.FaultCorrupt, chaos.FaultDiskFull}
			if !reflect.DeepEqual(c.Nemesis, want) {
				return fmt.Sprintf("groups expand to %v, want %v", c.Nemesis, want)
			}
			return ""
		}},
		{args: []string{"--bootstrap-server", "127.0.0.1:11092", "--compose", "skein"}, check: func(c *chaos.Config) string {
			if !reflect.DeepEqual(c.Nemesis, chaos.ComposeFaults) || c.NemesisName != chaos.JoinKinds(chaos.ComposeFaults) {
				return fmt.Sprintf("compose faults %v (%s), want %v", c.Nemesis, c.NemesisName, chaos.ComposeFaults)
			}
			return ""
		}},
		{args: []string{"--bootstrap-server", "127.0.0.1:11092", "--compose", "skein", "--nemesis", "kill,partition"}, check: func(c *chaos.Config) string {
			want := []chaos.FaultKind{chaos.FaultKill, chaos.FaultIsolateLeader, chaos.FaultIsolateController, chaos.FaultIsolateMinority}
			if !reflect.DeepEqual(c.Nemesis, want) {
				return fmt.Sprintf("a group keeps what Compose can do: %v, want %v", c.Nemesis, want)
			}
			return ""
		}},
		{args: []string{"--compose", "skein"}, wantErr: "--compose needs --bootstrap-server"},
		{args: []string{"--bootstrap-server", "127.0.0.1:11092", "--compose", "skein", "--nemesis", "kill,slow"}, wantErr: "slow is not available with --compose"},
		{args: []string{"--nemesis", "none"}, check: func(c *chaos.Config) string {
			if len(c.Nemesis) != 0 {
				return "none has faults"
			}
			return ""
		}},
		{args: []string{"--bootstrap-server", "127.0.0.1:9092"}, check: func(c *chaos.Config) string {
			if len(c.Nemesis) != 0 || c.NemesisName != "none" {
				return "process faults against an outside cluster"
			}
			return ""
		}},
		{args: []string{"--acks", "0", "--idempotent"}, wantErr: "--idempotent needs --acks all"},
		{args: []string{"--acks", "2"}, wantErr: "want all, 1 or 0"},
		{args: []string{"--nemesis", "kill,flood"}, wantErr: `--nemesis "flood"`},
		{args: []string{"--nemesis", "none,kill"}, wantErr: "none cannot be combined"},
		{args: []string{"--bootstrap-server", "127.0.0.1:9092", "--nemesis", "kill"}, wantErr: "--nemesis needs the local cluster"},
		{args: []string{"--duration", "500ms"}, wantErr: "--duration"},
		{args: []string{"--partitions", "0"}, wantErr: "--partitions"},
		{args: []string{"--producers", "100"}, wantErr: "--producers"},
		{args: []string{"--consumers", "0"}, wantErr: "--consumers"},
		{args: []string{"--replication-factor", "4"}, wantErr: "--replication-factor"},
		{args: []string{"--min-insync-replicas", "4"}, wantErr: "--min-insync-replicas"},
		{args: []string{"--port", "65500"}, wantErr: "--port"},
		{args: []string{"--rate", "10000", "--duration", "1h"}, wantErr: "fit in memory"},
		{args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var errOut bytes.Buffer
			cfg, err := parseVerifyFlags(tt.args, streams{out: &bytes.Buffer{}, err: &errOut}, verifyNow)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(cfg); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// TestVerifyCommandConfig: --command-config secures the clients of a
// --bootstrap-server cluster; the local cluster is plaintext, so it needs
// one.
func TestVerifyCommandConfig(t *testing.T) {
	props := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=alice\nsasl.password=pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := streams{out: &bytes.Buffer{}, err: &bytes.Buffer{}}
	if _, err := parseVerifyFlags([]string{"--command-config", props}, s, verifyNow); err == nil || !strings.Contains(err.Error(), "--command-config needs --bootstrap-server") {
		t.Fatalf("without --bootstrap-server: %v", err)
	}
	cfg, err := parseVerifyFlags([]string{"--bootstrap-server", "127.0.0.1:9092", "--command-config", props}, s, verifyNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.ClientOpts) == 0 {
		t.Error("no client options from the properties")
	}
	if _, err := parseVerifyFlags([]string{"--bootstrap-server", "127.0.0.1:9092", "--command-config", props + ".missing"}, s, verifyNow); err == nil {
		t.Error("a missing properties file was accepted")
	}
}
