package replicafetch

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
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
			sess, _ := idleSession(b, n)
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
