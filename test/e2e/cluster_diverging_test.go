package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/rpc"
)

// TestClusterFetchReportsDivergingEpoch: a follower's fetch (v12+) names
// the epoch of its last batch; when that epoch ends earlier in the
// leader's log than the follower's fetch offset, the answer carries
// DivergingEpoch instead of records, and the follower truncates.
func TestClusterFetchReportsDivergingEpoch(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "diverge"); err != nil {
		t.Fatal(err)
	}
	leader := c.leaderOf(ctx, "diverge", 0)
	producer := c.client(kgo.DefaultProduceTopic("diverge"))
	for i := 0; i < 10; i++ {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	follower := int32(1)
	if leader == 1 {
		follower = 2
	}
	conn, err := rpc.Dial(ctx, c.addrs()[leader-1], "fake-follower")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fetch := func(offset int64, lastEpoch int32) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID = follower
		req.MaxBytes = 1 << 20
		req.SessionEpoch = -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "diverge"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset = offset
		fp.LastFetchedEpoch = lastEpoch
		fp.CurrentLeaderEpoch = -1
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}
	// In agreement: epoch 0 covers offsets up to 10 on the leader.
	if p := fetch(5, 0); p.DivergingEpoch.EndOffset != -1 || len(p.RecordBatches) == 0 {
		t.Fatalf("consistent fetch: diverging %+v, %d bytes", p.DivergingEpoch, len(p.RecordBatches))
	}
	// An epoch the leader never had: diverging, no records.
	if p := fetch(5, 7); p.DivergingEpoch.EndOffset < 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("fetch with unknown epoch 7: diverging %+v, %d bytes", p.DivergingEpoch, len(p.RecordBatches))
	}
}
