package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestAssessPartition(t *testing.T) {
	tests := []struct {
		name   string
		p      kadm.PartitionDetail
		minISR int
		want   string
	}{
		{"healthy", kadm.PartitionDetail{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, 2, "ok"},
		{"one replica behind", kadm.PartitionDetail{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}, 2, "under-replicated"},
		{"below min ISR", kadm.PartitionDetail{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}, 2, "under-replicated,under-min-isr"},
		{"min ISR above replication factor", kadm.PartitionDetail{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}, 2, "under-min-isr"},
		{"min ISR unknown", kadm.PartitionDetail{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, 0, "ok"},
		{"no leader", kadm.PartitionDetail{Leader: -1, Replicas: []int32{1, 2}, ISR: []int32{}, Err: kerr.LeaderNotAvailable}, 1,
			"offline,under-replicated,under-min-isr,LEADER_NOT_AVAILABLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := assessPartition(tt.p, tt.minISR)
			if got := h.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if h.healthy() != (tt.want == "ok") {
				t.Errorf("healthy() = %v for %q", h.healthy(), tt.want)
			}
		})
	}
}

func TestClusterDescribe(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "plain", "--partitions", "2", "-b", addr)
	mustRun(t, runTopic, "", "create", "strict", "--config", "min.insync.replicas=2", "-b", addr)

	out := mustRun(t, runCluster, "", "describe", "-b", addr)
	if !regexp.MustCompile(`(?m)^Cluster ID:  \S+\nController:  1$`).MatchString(out) {
		t.Errorf("cluster id / controller missing:\n%s", out)
	}
	if got := strings.Join(tableRow(t, out, "1"), " "); got != "1 "+addr+" -" {
		t.Errorf("broker row %q, want %q", got, "1 "+addr+" -")
	}
	// TOPICS PARTITIONS OFFLINE UNDER-REPLICATED UNDER-MIN-ISR
	if got := strings.Join(tableRow(t, out, "2", "3"), " "); got != "2 3 0 0 1" {
		t.Errorf("health row %q, want 2 3 0 0 1", got)
	}
	if got := strings.Join(tableRow(t, out, "strict"), " "); got != "strict 0 1 1 1 under-min-isr" {
		t.Errorf("unhealthy partition row %q", got)
	}

	for _, args := range [][]string{nil, {"status"}, {"describe", "extra"}} {
		if r := runCLI(t, runCluster, "", append(args, "-b", addr)...); r.err == nil {
			t.Errorf("%q succeeded", args)
		}
	}
}
