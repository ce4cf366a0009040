package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replica"
	"github.com/skein-log/skein/internal/vfs"
)

// BenchmarkIdleFollowerFetch is the leader's side of one follower fetch
// that finds nothing new, over a follower session of 1,000 partitions
// (what every idle follower sends each leader every
// replica.fetch.wait.max.ms; with 10,000 partitions of RF=3 on 3 brokers
// each leader serves two such sessions of ~3,300). The time per op divided
// by the partitions is the idle cost of one partition-fetch.
func BenchmarkIdleFollowerFetch(b *testing.B) {
	for _, n := range []int{1000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			br, params, _ := idleLeader(b, n)
			var results []api.FetchResult
			done := func(r []api.FetchResult) { results = r }
			br.fetch(params, done)
			for _, r := range results {
				if r.Err != nil || len(r.Records) != 0 {
					b.Fatalf("idle fetch answered %+v", r)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				br.fetch(params, done)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/partition")
		})
	}
}

// BenchmarkIdleFollowerFetchParked is the whole of an idle follower
// fetch on the leader, as it goes with replica.fetch.wait.max.ms: the
// read finds nothing, the fetch parks on every partition, and its max
// wait expires with nothing changed, which answers the last read and
// unhooks it. The expiry is fired from here (what the max-wait timer
// calls) rather than waited for.
func BenchmarkIdleFollowerFetchParked(b *testing.B) {
	for _, n := range []int{1000, 3000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			br, params, parts := idleLeader(b, n)
			params.MaxWait = time.Hour
			var results []api.FetchResult
			done := func(r []api.FetchResult) { results = r }
			round := func() {
				results = nil
				br.fetch(params, done)
				w := parkedOn(parts[0])
				if w == nil || results != nil {
					b.Fatalf("idle fetch did not park")
				}
				w.expire()
				if len(results) != n {
					b.Fatalf("expiry answered %d partitions", len(results))
				}
				if parkedOn(parts[0]) != nil || parkedOn(parts[n-1]) != nil {
					b.Fatalf("expired fetch still hooked")
				}
			}
			round()
			for _, r := range results {
				if r.Err != nil || len(r.Records) != 0 {
					b.Fatalf("idle fetch answered %+v", r)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				round()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/partition")
		})
	}
}

// parkedOn is the fetch parked on p, if any (the benchmarks park one at
// a time).
func parkedOn(p *partition) *fetchWaiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.watchers) == 0 {
		return nil
	}
	return p.watchers[0].w
}

// idleLeader is a broker leading n partitions of one topic with nothing
// in them, followed by broker 2, and a follower fetch of all of them
// (at the log end, naming epoch 0 as its last fetched, as a follower of
// epoch 0 does).
func idleLeader(b *testing.B, n int) (*Broker, api.FetchParams, []*partition) {
	br := newUnitBroker(b, vfs.NewMem())
	tcfg, err := config.ResolveTopic(br.cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	var parts []*partition
	params := api.FetchParams{ReplicaID: 2, MaxBytes: 10 << 20, MinBytes: 1}
	topic := &metadata.Topic{Name: "idle", ID: metadata.TopicID{7}}
	for i := range n {
		leading := metadata.Partition{Index: int32(i), Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 0}
		p, err := openPartition(br, topic, leading, tcfg, fmt.Sprintf("/data/idle-%d", i), false)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.close() })
		if err := p.apply(leading, metadata.RoleLeader, tcfg, time.Now()); err != nil {
			b.Fatal(err)
		}
		br.parts[partKey{topic.ID, int32(i)}] = p
		parts = append(parts, p)
		params.Partitions = append(params.Partitions, api.FetchPartition{Topic: topic.ID, Partition: int32(i),
			MaxBytes: 1 << 20, CurrentLeaderEpoch: 0, LastFetchedEpoch: 0})
	}
	return br, params, parts
}

var _ replica.Source = (*partition)(nil)
