package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestSampleConfigs loads every file shipped under config/, so a sample can
// never fall out of step with the registry.
func TestSampleConfigs(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "config", "*.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 4 {
		t.Fatalf("found %d sample files, want server.properties and broker-1..3", len(paths))
	}
	brokers := map[string]*Broker{}
	for _, path := range paths {
		b, err := Load(path, nil, nil)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		brokers[filepath.Base(path)] = b
	}

	// The three cluster files must describe one cluster: same quorum and
	// cluster id, distinct ids, ports and directories.
	var cluster []*Broker
	for name, b := range brokers {
		if strings.HasPrefix(name, "broker-") {
			cluster = append(cluster, b)
		}
	}
	if len(cluster) != 3 {
		t.Fatalf("found %d broker-N.properties, want 3", len(cluster))
	}
	ids, addrs, dirs := map[int32]bool{}, map[string]bool{}, map[string]bool{}
	for _, b := range cluster {
		if !reflect.DeepEqual(b.ControllerQuorumVoters, cluster[0].ControllerQuorumVoters) {
			t.Errorf("node %d: voters %v differ from %v", b.NodeID, b.ControllerQuorumVoters, cluster[0].ControllerQuorumVoters)
		}
		if b.ClusterID == "" || b.ClusterID != cluster[0].ClusterID {
			t.Errorf("node %d: cluster.id %q, want one shared non-empty id", b.NodeID, b.ClusterID)
		}
		if ids[b.NodeID] {
			t.Errorf("node.id %d used twice", b.NodeID)
		}
		ids[b.NodeID] = true
		for _, l := range b.Listeners {
			if addrs[l.Addr()] {
				t.Errorf("address %s used twice", l.Addr())
			}
			addrs[l.Addr()] = true
		}
		for _, a := range b.AdminListeners {
			if addrs[a.Addr()] {
				t.Errorf("address %s used twice", a.Addr())
			}
			addrs[a.Addr()] = true
		}
		for _, d := range b.LogDirs {
			if dirs[d] {
				t.Errorf("log dir %s used twice", d)
			}
			dirs[d] = true
		}
		ctrl, _ := b.ControllerListener()
		var self Voter
		for _, v := range b.ControllerQuorumVoters {
			if v.ID == b.NodeID {
				self = v
			}
		}
		if self.Addr() != ctrl.Addr() {
			t.Errorf("node %d: voter address %s is not its controller listener %s", b.NodeID, self.Addr(), ctrl.Addr())
		}
		if b.TopicDefaults.MinInsyncReplicas >= int32(b.DefaultReplicationFactor) {
			t.Errorf("node %d: min.insync.replicas %d leaves no room for a failure with replication factor %d",
				b.NodeID, b.TopicDefaults.MinInsyncReplicas, b.DefaultReplicationFactor)
		}
	}
}
