package replicafetch

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// BenchmarkIdleFetchRound is the follower's side of one idle fetch round
// with one leader: NextHolding over every partition followed (an
// incremental fetch of a session whose partitions did not change, so the
// request carries none) and the leader's empty incremental answer. With
// 10,000 partitions of RF=3 on 3 brokers each follower runs such a round
// with each of two leaders every replica.fetch.wait.max.ms, over ~3,300
// partitions each.
func BenchmarkIdleFetchRound(b *testing.B) {
	for _, n := range []int{1000, 3000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			fs := vfs.NewMem()
			sess := New[*testFollower](Config{ReplicaID: 2, MaxWait: 500 * time.Millisecond, MinBytes: 1, MaxBytes: 10 << 20,
				PartitionMaxBytes: 1 << 20, RefusalPause: time.Second, MaxTruncationRounds: 16})
			var assign []Assignment[*testFollower]
			for i := range n {
				l, err := storage.Open(fs, fmt.Sprintf("/p%d", i), storage.DefaultConfig(), storage.Options{Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { l.Close() })
				if _, err := l.AppendReplica(batchAt(0, 0, 3), 0); err != nil {
					b.Fatal(err)
				}
				f := &testFollower{name: fmt.Sprintf("p%d", i), index: int32(i), log: l, hw: 3}
				assign = append(assign, Assignment[*testFollower]{P: f, Topic: "idle", Partition: int32(i), Epoch: 0})
			}
			sess.Assign(assign)
			// Reconcile every partition (the leader's epoch 0 ends at 3),
			// then a full fetch opens the session.
			step := sess.Next(0, "c")
			epochs, ok := step.Request.(*kmsg.OffsetForLeaderEpochRequest)
			if !ok {
				b.Fatalf("first request %T", step.Request)
			}
			er := kmsg.NewPtrOffsetForLeaderEpochResponse()
			for _, t := range epochs.Topics {
				rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
					rp.Partition, rp.LeaderEpoch, rp.EndOffset = p.Partition, 0, 3
					rt.Partitions = append(rt.Partitions, rp)
				}
				er.Topics = append(er.Topics, rt)
			}
			if rd := sess.Answer(0, er, nil); len(rd.Actions) != n || len(rd.Violations) != 0 {
				b.Fatalf("reconciliation: %d actions, %v", len(rd.Actions), rd.Violations)
			}
			full := sess.Next(0, "c").Request.(*kmsg.FetchRequest)
			if full.SessionEpoch != 0 || len(full.Topics) != 1 || len(full.Topics[0].Partitions) != n {
				b.Fatalf("full fetch: epoch %d, %d topics", full.SessionEpoch, len(full.Topics))
			}
			fr := kmsg.NewPtrFetchResponse()
			fr.SessionID = 9
			sess.Answer(0, fr, nil)
			idle := kmsg.NewPtrFetchResponse()
			idle.SessionID = 9
			round := func() {
				req, ok := sess.Next(0, "c").Request.(*kmsg.FetchRequest)
				if !ok || len(req.Topics) != 0 || req.SessionID != 9 {
					b.Fatalf("idle round sent %+v", req)
				}
				if rd := sess.Answer(0, idle, nil); len(rd.Actions) != 0 || rd.Backoff {
					b.Fatalf("idle answer gave %+v", rd)
				}
			}
			round()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				round()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/partition")
		})
	}
}
