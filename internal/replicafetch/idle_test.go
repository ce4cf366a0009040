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

// idleSession is a session over n partitions of epoch 0 holding 3 records
// each, reconciled and past its full fetch: its next round is idle.
func idleSession(tb testing.TB, n int) (*Session[*testFollower], []*testFollower) {
	tb.Helper()
	fs := vfs.NewMem()
	sess := New[*testFollower](Config{ReplicaID: 2, MaxWait: 500 * time.Millisecond, MinBytes: 1, MaxBytes: 10 << 20,
		PartitionMaxBytes: 1 << 20, RefusalPause: time.Second, MaxTruncationRounds: 16})
	var assign []Assignment[*testFollower]
	var followers []*testFollower
	for i := range n {
		l, err := storage.Open(fs, fmt.Sprintf("/p%d", i), storage.DefaultConfig(), storage.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { l.Close() })
		if _, err := l.AppendReplica(batchAt(0, 0, 3), 0); err != nil {
			tb.Fatal(err)
		}
		f := &testFollower{name: fmt.Sprintf("p%d", i), index: int32(i), log: l, hw: 3}
		followers = append(followers, f)
		assign = append(assign, Assignment[*testFollower]{P: f, Topic: "idle", Partition: int32(i), Epoch: 0})
	}
	sess.Assign(assign)
	// Reconcile every partition (the leader's epoch 0 ends at 3), then a
	// full fetch opens the session.
	epochs, ok := sess.Next(0, "c").Request.(*kmsg.OffsetForLeaderEpochRequest)
	if !ok {
		tb.Fatal("first request is not an OffsetForLeaderEpoch")
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
		tb.Fatalf("reconciliation: %d actions, %v", len(rd.Actions), rd.Violations)
	}
	full := sess.Next(0, "c").Request.(*kmsg.FetchRequest)
	if full.SessionEpoch != 0 || len(full.Topics) != 1 || len(full.Topics[0].Partitions) != n {
		tb.Fatalf("full fetch: epoch %d, %d topics", full.SessionEpoch, len(full.Topics))
	}
	fr := kmsg.NewPtrFetchResponse()
	fr.SessionID = 9
	sess.Answer(0, fr, nil)
	return sess, followers
}

// idleRound sends the next fetch, answers it with nothing and returns
// what it carried: partition -> (fetch offset, log start, last fetched
// epoch).
func idleRound(t *testing.T, sess *Session[*testFollower]) map[int32][3]int64 {
	t.Helper()
	req, ok := sess.Next(0, "c").Request.(*kmsg.FetchRequest)
	if !ok || req.SessionID != 9 {
		t.Fatalf("round sent %+v", req)
	}
	got := map[int32][3]int64{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			got[rp.Partition] = [3]int64{rp.FetchOffset, rp.LogStartOffset, int64(rp.LastFetchedEpoch)}
		}
	}
	idle := kmsg.NewPtrFetchResponse()
	idle.SessionID = 9
	if rd := sess.Answer(0, idle, nil); len(rd.Actions) != 0 || rd.Backoff {
		t.Fatalf("idle answer gave %+v", rd)
	}
	return got
}

// TestIdleRoundSeesLogChanges: an idle round reads every partition's
// fetch state from its log, so a change the session did not ask for (an
// epoch recorded directly in the cache as a leader does, a truncation, a
// log start moved by retention) is sent in the next round, with the
// latest epoch the log publishes beside its bounds.
func TestIdleRoundSeesLogChanges(t *testing.T) {
	sess, followers := idleSession(t, 3)
	if got := idleRound(t, sess); len(got) != 0 {
		t.Fatalf("idle round carried %v", got)
	}
	// Outside the log's lock, as replica.becomeLeader records its epoch.
	if err := followers[0].log.Epochs().Assign(4, 3); err != nil {
		t.Fatal(err)
	}
	if e, ok := followers[0].log.LatestEpoch(); !ok || e != 4 {
		t.Fatalf("LatestEpoch %d %v after Assign(4)", e, ok)
	}
	if err := followers[1].log.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := followers[2].log.DeleteBefore(2); err != nil {
		t.Fatal(err)
	}
	want := map[int32][3]int64{0: {3, 0, 4}, 1: {0, 0, -1}, 2: {3, 2, 0}}
	if got := idleRound(t, sess); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("round after the changes carried %v, want %v", got, want)
	}
	if got := idleRound(t, sess); len(got) != 0 {
		t.Fatalf("idle round after them carried %v", got)
	}
	// Emptied and restarted: no epoch left.
	if err := followers[0].log.TruncateFullyAndStartAt(10); err != nil {
		t.Fatal(err)
	}
	if e, ok := followers[0].log.LatestEpoch(); ok {
		t.Fatalf("LatestEpoch %d after a restart", e)
	}
	want = map[int32][3]int64{0: {10, 10, -1}}
	if got := idleRound(t, sess); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("round after the restart carried %v, want %v", got, want)
	}
}
