package sim

import (
	"testing"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
)

// TestReplicaIsTheBrokerCore: a simulated replica runs the broker's replica
// core, so paths the simulator's own copy lacked are there: the storage
// configuration carries the compaction settings, and a LogAppendTime topic
// has its batches stamped with the broker's time (issue 11, item 6).
func TestReplicaIsTheBrokerCore(t *testing.T) {
	c := newCluster(Options{Seed: 1, Nodes: 1, Partitions: 1, Duration: time.Second})
	n := c.nodes[1]
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	p := n.proc
	cfg, err := config.ResolveTopic(p.cfg, map[string]string{
		"message.timestamp.type":    "LogAppendTime",
		"min.cleanable.dirty.ratio": "0.2",
		"delete.retention.ms":       "1234",
		"min.compaction.lag.ms":     "55",
	})
	if err != nil {
		t.Fatal(err)
	}
	topic := &metadata.Topic{Name: "t", ID: metadata.TopicID{7}}
	st := metadata.Partition{Index: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}
	r, _, err := p.openReplica(topic, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.log.Config(); got.MinCleanableDirtyRatio != 0.2 || got.DeleteRetentionMs != 1234 || got.MinCompactionLagMs != 55 {
		t.Fatalf("storage config %+v lacks the topic's compaction settings", got)
	}
	if err := r.apply(st, metadata.RoleLeader, cfg); err != nil {
		t.Fatal(err)
	}
	var res api.ProduceResult
	answered := false
	r.produce(api.ProduceParams{Acks: 0, Timeout: time.Second, Batches: [][]byte{batch.Build([][]byte{[]byte("v")}, 5)}},
		func(pr api.ProduceResult) { res, answered = pr, true })
	if !answered || res.Err != nil {
		t.Fatalf("produce answered %v: %+v", answered, res)
	}
	if want := c.nowMs(); res.LogAppendTime != want {
		t.Fatalf("LogAppendTime %d, want the broker's time %d", res.LogAppendTime, want)
	}
}
