package node

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/metrics"
	"github.com/skein-log/skein/internal/vfs"
)

// newUnitBroker is broker 1 on fs with what a partition needs (metrics, a
// flusher) but nothing started: tests drive its partitions by hand, giving
// each its role, with no network or controller.
func newUnitBroker(t testing.TB, fs *vfs.Mem) *Broker {
	t.Helper()
	return newUnitBrokerDirs(t, fs, "/data")
}

// newUnitBrokerDirs is newUnitBroker with log.dirs set to dirs.
func newUnitBrokerDirs(t testing.TB, fs vfs.FS, dirs string) *Broker {
	t.Helper()
	cfg, err := config.NewBroker(map[string]string{
		"node.id":                  "1",
		"process.roles":            "broker,controller",
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters": "1@127.0.0.1:1",
		"log.dirs":                 dirs,
		"cluster.id":               "unit-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	b := New(cfg, Options{FS: fs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if b.metrics, err = metrics.New(b.reg, metrics.Options{}); err != nil {
		t.Fatal(err)
	}
	b.flusher = newFlusher()
	t.Cleanup(b.flusher.stop)
	return b
}

// openFollowerOf2 opens partition 0 of topic on b (broker 1) as a follower
// of broker 2, both in the ISR, in leader epoch 0.
func openFollowerOf2(t *testing.T, b *Broker, topic string) (*partition, config.TopicConfig) {
	t.Helper()
	tcfg, err := config.ResolveTopic(b.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	following := metadata.Partition{Index: 0, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2, LeaderEpoch: 0}
	p, err := openPartition(b, &metadata.Topic{Name: topic, ID: metadata.TopicID{1}}, following, tcfg, "/data/"+topic+"-0", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.close() })
	if err := p.apply(following, metadata.RoleFollower, tcfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	return p, tcfg
}
