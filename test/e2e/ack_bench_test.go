package e2e

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkAcksAllOneRecord measures the lone-record acks=all path of a
// 3-broker in-process cluster (real TCP, real files, fsync before the
// ack): one partition of RF=3, one 100 B record produced at a time, each
// waiting for its acknowledgement. ns/op is the round trip; p50-ms and
// p99-ms its percentiles; vcsw/op the voluntary context switches of the
// whole process (the three brokers and the client) per record, from
// getrusage: a thread that parks for want of work, roughly the goroutine
// hand-offs that reach the kernel (it still moves with the machine's
// load, which decides whether a spinning thread finds work); ivcsw/op,
// the involuntary ones, are mostly other processes taking the cores.
//
//	go test ./test/e2e/ -run '^$' -bench AcksAllOneRecord -benchtime 2000x -count 6
func BenchmarkAcksAllOneRecord(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := startCluster(b, 3, nil)
	adm := observerClient(b, c.addrs())
	const topic = "one-record"
	createReplicatedTopic(ctx, b, adm, topic, 1, 3, nil)
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1))
	val := make([]byte, 100)
	// Warm up: connections, metadata, the producer id.
	for range 50 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: val}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	vBefore, ivBefore := contextSwitches(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: val}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	v, iv := contextSwitches(b)
	slices.Sort(lat)
	b.ReportMetric(float64(v-vBefore)/float64(len(lat)), "vcsw/op")
	b.ReportMetric(float64(iv-ivBefore)/float64(len(lat)), "ivcsw/op")
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
}

// contextSwitches is the process's voluntary and involuntary context
// switches so far.
func contextSwitches(b *testing.B) (voluntary, involuntary int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Nvcsw, ru.Nivcsw
}
