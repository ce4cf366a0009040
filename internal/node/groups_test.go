package node

import (
	"testing"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/grouphost"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/vfs"
)

func TestGroupConfigFollowsBrokerProperties(t *testing.T) {
	cfg, err := config.NewBroker(map[string]string{
		"node.id":                          "1",
		"listeners":                        "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"log.dirs":                         t.TempDir(),
		"group.initial.rebalance.delay.ms": "250",
		"group.min.session.timeout.ms":     "1000",
		"group.max.session.timeout.ms":     "20000",
		"offsets.retention.minutes":        "3",
		"offset.metadata.max.bytes":        "77",
		"group.max.size":                   "12",
	})
	if err != nil {
		t.Fatal(err)
	}
	gc := groupConfig(cfg)
	if gc.InitialRebalanceDelayMs != 250 || gc.MinSessionTimeoutMs != 1000 || gc.MaxSessionTimeoutMs != 20000 ||
		gc.OffsetsRetentionMs != 180000 || gc.MaxOffsetMetadataBytes != 77 || gc.MaxSize != 12 {
		t.Fatalf("group config %+v does not follow the properties", gc)
	}
}

func TestGroupConfigKeepsTheSizeCapAtKafkasDefault(t *testing.T) {
	cfg, err := config.NewBroker(map[string]string{
		"node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "log.dirs": t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := groupConfig(cfg).MaxSize; got != 10000 {
		t.Fatalf("group.max.size at Kafka's unbounded default gives %d members, want the coordinator's cap 10000", got)
	}
}

// TestLoadedCoordinatorWaitsForItsLogToCommit: a coordinator loads every
// record of its partition, also those beyond the high watermark (a former
// leader's, or its own failed write's after a reload), which may yet be
// truncated. Its answers wait until the high watermark covers what it
// loaded. Without that, internal/sim seed 172 (TestRegressions) had a
// reloaded coordinator hand a member the assignment of an uncommitted
// generation 18, which the next coordinator then made again with other
// members.
func TestLoadedCoordinatorWaitsForItsLogToCommit(t *testing.T) {
	b := newUnitBroker(t, vfs.NewMem())
	p, tcfg := openFollowerOf2(t, b, api.OffsetsTopic)

	// As a follower, this replica fetched an offset commit its leader had
	// not committed yet (high watermark 0).
	scratch, err := group.New(group.DefaultConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	_, out := scratch.CommitOffsets(0, group.CommitRequest{GroupID: "g", Generation: -1,
		Offsets: []group.CommitOffset{{Topic: "t", Partition: 0, Offset: 42, LeaderEpoch: -1}}})
	if len(out.Records) != 1 {
		t.Fatalf("the commit made %d records, want 1", len(out.Records))
	}
	rec := out.Records[0]
	if err := p.AppendFromLeader(batch.BuildKeyed([]batch.KeyValue{{Key: rec.Key, Value: rec.Value}}, 0), 0, 0); err != nil {
		t.Fatal(err)
	}

	// Now it leads, with the other replica still in the ISR: the record
	// is committed once that replica has fetched past it.
	leading := metadata.Partition{Index: 0, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}
	if err := p.apply(leading, metadata.RoleLeader, tcfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	if hw := p.highWatermark.Load(); hw != 0 {
		t.Fatalf("high watermark %d before the follower fetched, want 0", hw)
	}
	gc := newGroupCoordinator(newGroupRuntime(b), p, 1)
	gc.load()
	defer gc.stop("test over")

	var fetched []group.FetchedOffset
	answered := make(chan error, 1)
	err = gc.Do(func(h *grouphost.Host, now int64) (grouphost.Ready, error) {
		return h.Call(now, func(c *group.Coordinator, _ int64) group.Output {
			fetched = c.FetchOffsets("g", nil)
			return group.Output{}
		}, func(err error) { answered <- err })
	})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing but the follower's fetch below moves the high watermark, so
	// an answer already here was sent from the uncommitted record.
	select {
	case err := <-answered:
		t.Fatalf("OffsetFetch answered (err %v, offsets %v) while the loaded commit is above the high watermark", err, fetched)
	default:
	}
	if err := p.onFollowerFetch(2, 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := <-answered; err != nil {
		t.Fatalf("OffsetFetch failed after the loaded record was committed: %v", err)
	}
	if len(fetched) != 1 || fetched[0].Offset != 42 {
		t.Fatalf("fetched %v, want offset 42 for t-0", fetched)
	}
}
