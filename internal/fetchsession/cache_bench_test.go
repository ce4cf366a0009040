package fetchsession

import (
	"fmt"
	"testing"
)

// BenchmarkIdleIncrementalFetch is the leader's session work of one idle
// follower fetch: Begin of an incremental fetch naming no partition over
// a session of n (the follower's share of 10,000 partitions of RF=3 on 3
// brokers is ~3,300 per leader) and Complete with nothing changed, which
// carries none.
func BenchmarkIdleIncrementalFetch(b *testing.B) {
	for _, n := range []int{1000, 3300} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			c := New(1000, 120_000, 1)
			ps := make([]Partition, n)
			for i := range ps {
				ps[i] = Partition{Key: Key{Name: fmt.Sprintf("t%d", i/100), Partition: int32(i % 100)}, FetchOffset: 3, LogStartOffset: 0, MaxBytes: 1 << 20, LastFetchedEpoch: 0}
			}
			ctx := c.Begin(Request{Epoch: InitialEpoch, Privileged: true, Partitions: ps})
			o := c.Complete(ctx, quiet(n, 3), 0)
			if o.SessionID == 0 {
				b.Fatal("no session")
			}
			id, epoch := o.SessionID, nextEpoch(InitialEpoch)
			results := quiet(n, 3)
			b.ReportAllocs()
			for b.Loop() {
				ctx := c.Begin(Request{SessionID: id, Epoch: epoch, Privileged: true})
				if ctx.Kind != Incremental {
					b.Fatalf("kind %v", ctx.Kind)
				}
				o := c.Complete(ctx, results, 0)
				if o.ErrorCode != 0 || o.SessionID != id {
					b.Fatalf("outcome %+v", o)
				}
				epoch = nextEpoch(epoch)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/partition")
		})
	}
}
