package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetForLeaderEpochAndFencing checks the KIP-101 answer of a leader
// and the KIP-320 fencing of requests that carry a current leader epoch.
func TestOffsetForLeaderEpochAndFencing(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("epochs", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := tb.client()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "epochs", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	ask := func(current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "epochs"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = 0
		rp.CurrentLeaderEpoch = current
		rp.LeaderEpoch = epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}

	if got := ask(0, 0); got.ErrorCode != 0 || got.LeaderEpoch != 0 || got.EndOffset != 10 {
		t.Fatalf("epoch 0: got error %d epoch %d end %d, want epoch 0 ending at the log end 10", got.ErrorCode, got.LeaderEpoch, got.EndOffset)
	}
	if got := ask(0, 7); got.ErrorCode != 0 || got.LeaderEpoch != -1 || got.EndOffset != -1 {
		t.Fatalf("epoch 7 (never existed): got epoch %d end %d, want -1 -1", got.LeaderEpoch, got.EndOffset)
	}
	if got := ask(3, 0); got.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("current epoch 3 (ahead of the leader): got error %d, want UNKNOWN_LEADER_EPOCH", got.ErrorCode)
	}

	// A fetch that claims a newer leader epoch is refused the same way.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID = -1
	fetch.MaxBytes = 1 << 20
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("epochs")
	meta.Topics = append(meta.Topics, mt)
	metaResp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "epochs"
	// The client may send a version that names topics by id.
	ft.TopicID = metaResp.Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = 0
	fp.CurrentLeaderEpoch = 3
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp, err := cl.Broker(1).Request(ctx, fetch)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("fetch with current epoch 3: got error %d, want UNKNOWN_LEADER_EPOCH", code)
	}
}
