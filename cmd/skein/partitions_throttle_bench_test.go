package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/testcluster"
)

// catchUpBytes is what the moved partition holds in
// BenchmarkReassignCatchUp: at the 4 MiB/s throttle, about five seconds
// of copying past the first second's burst.
const catchUpBytes = 24 << 20

// catchUpRate is the --throttle of the throttled case.
const catchUpRate = 4 << 20

// BenchmarkReassignCatchUp measures the catch-up of a replica added by
// skein partitions reassign, unthrottled and with --throttle 4 MiB/s (the
// rate set as dynamic broker configs, the issue 15 measurement):
//
//	go test ./cmd/skein -run '^$' -bench BenchmarkReassignCatchUp -benchtime 1x
//
// MiB/s is the partition's size over the time from --execute until
// --verify saw the move completed. For the throttled case steady-MiB/s is
// the throttled traffic the leader counted (skein_replication_throttled_bytes_total)
// from 1.5 s after --execute (past the token bucket's one-second burst)
// to the last sample before the copy ended, sampled every 100 ms, and
// rate-ratio is steady-MiB/s over the configured rate (1 = exactly the
// rate). Nothing is asserted: the numbers go to docs/reassignment.md.
func BenchmarkReassignCatchUp(b *testing.B) {
	props := testcluster.Props(b, testcluster.Combine(2), map[string]string{"offsets.topic.num.partitions": "1"})
	brokers := startClusterOf(b, props)
	addr := brokers[0].Addr("PLAINTEXT")
	for _, tc := range []struct {
		name string
		rate int64
	}{{"unthrottled", 0}, {"throttled-4MiB", catchUpRate}} {
		b.Run(tc.name, func(b *testing.B) {
			for i := range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
				_, file := fillAndPlan(b, ctx, addr, fmt.Sprintf("%s-%d", tc.name, i), 1, 2, catchUpBytes)
				args := []string{"reassign", "--execute", "--plan", file, "-b", addr}
				if tc.rate > 0 {
					args = append(args, "--throttle", strconv.FormatInt(tc.rate, 10))
				}
				leaderBytes := func() float64 {
					return throttleMetric(b, brokers[0], "skein_replication_throttled_bytes_total", "leader")
				}
				base := leaderBytes()
				var out bytes.Buffer
				b.ResetTimer()
				start := time.Now()
				if err := runPartitions(ctx, args, streams{in: strings.NewReader(""), out: &out, err: &out}); err != nil {
					b.Fatalf("execute: %v\n%s", err, out.String())
				}
				type sample struct {
					at    time.Duration
					bytes float64
				}
				var samples []sample
				tick := time.NewTicker(100 * time.Millisecond)
				for done := false; !done; {
					select {
					case <-ctx.Done():
						b.Fatal("the move never completed")
					case <-tick.C:
					}
					samples = append(samples, sample{time.Since(start), leaderBytes() - base})
					out.Reset()
					if err := runPartitions(ctx, []string{"reassign", "--verify", "--plan", file, "-b", addr}, streams{in: strings.NewReader(""), out: &out, err: &out}); err != nil {
						b.Fatalf("verify: %v\n%s", err, out.String())
					}
					done = strings.Contains(out.String(), "is completed.")
				}
				took := time.Since(start)
				tick.Stop()
				cancel()
				b.StopTimer()
				b.ReportMetric(float64(catchUpBytes)/(1<<20)/took.Seconds(), "MiB/s")
				if tc.rate == 0 {
					continue
				}
				// The steady window: past the burst, up to the last
				// sample that still saw bytes move.
				first, last := -1, -1
				for j, s := range samples {
					if s.at >= 1500*time.Millisecond && first < 0 {
						first = j
					}
					if j > 0 && s.bytes > samples[j-1].bytes {
						last = j
					}
				}
				if first < 0 || last <= first {
					b.Fatalf("too few samples in the steady window: %v", samples)
				}
				steady := (samples[last].bytes - samples[first].bytes) / (samples[last].at - samples[first].at).Seconds()
				b.ReportMetric(steady/(1<<20), "steady-MiB/s")
				b.ReportMetric(steady/float64(tc.rate), "rate-ratio")
				b.Logf("copied %d MiB in %v; throttled bytes counted by the leader: %.0f; steady %.3f MiB/s over %v (%d samples)",
					catchUpBytes>>20, took.Round(time.Millisecond), samples[len(samples)-1].bytes, steady/(1<<20),
					(samples[last].at - samples[first].at).Round(time.Millisecond), last-first+1)
			}
		})
	}
}
