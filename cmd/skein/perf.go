package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	commands["perf"] = command{summary: "measure produce or consume throughput and latency (like kafka-*-perf-test)", run: clientCommand(runPerf)}
}

func runPerf(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, "usage: skein perf produce|consume [flags]", map[string]clientRun{
		"produce": runPerfProduce,
		"consume": runPerfConsume,
	})
}

// perfReportInterval is how often a progress line is printed.
const perfReportInterval = 5 * time.Second

func runPerfProduce(ctx context.Context, args []string, s streams) error {
	out := s.out
	fs := newFlagSet("skein perf produce", s)
	bootstrap := bootstrapFlag(fs)
	topic := fs.String("topic", "perf", "topic to produce to")
	numRecords := fs.Int64("num-records", 100_000, "records to send")
	recordSize := fs.Int("record-size", 1024, "bytes per record value")
	throughput := fs.Int("throughput", -1, "records per second at most (-1: unthrottled)")
	acks := fs.String("acks", "all", "acks: 0, 1 or all")
	compression := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	asJSON := fs.Bool("json", false, "print the final result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *numRecords <= 0 || *recordSize < 0 || *recordSize > 64<<20 {
		return errors.New("--num-records must be positive and --record-size between 0 and 64 MiB")
	}
	opts := []kgo.Opt{kgo.SeedBrokers(splitList(*bootstrap)...), kgo.DefaultProduceTopic(*topic), kgo.ProducerLinger(5 * time.Millisecond), kgo.AllowAutoTopicCreation()}
	ackOpt, err := parseAcks(*acks)
	if err != nil {
		return err
	}
	opts = append(opts, ackOpt...)
	codec, err := parseCompression(*compression)
	if err != nil {
		return err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	value := make([]byte, *recordSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	stats := newLatencyStats(*numRecords)
	start := time.Now()
	var pacer <-chan time.Time
	if *throughput > 0 {
		t := time.NewTicker(time.Second / time.Duration(*throughput))
		defer t.Stop()
		pacer = t.C
	}
	stopProgress := stats.startProgress(out, perfReportInterval, *recordSize)
	var firstErr error
	var errMu sync.Mutex
	for i := int64(0); i < *numRecords && ctx.Err() == nil; i++ {
		if pacer != nil {
			select {
			case <-pacer:
			case <-ctx.Done():
			}
		}
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
				stats.fail()
				return
			}
			stats.record(time.Since(sent))
		})
	}
	err = cl.Flush(ctx)
	stopProgress()
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	res := stats.result(elapsed, *recordSize)
	if *asJSON {
		return json.NewEncoder(out).Encode(res)
	}
	fmt.Fprintf(out, "%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %.0f ms 50th, %.0f ms 95th, %.0f ms 99th, %.0f ms 99.9th.\n",
		res.Records, res.RecordsPerSec, res.MBPerSec, res.AvgLatencyMs, res.MaxLatencyMs, res.P50Ms, res.P95Ms, res.P99Ms, res.P999Ms)
	if res.Errors > 0 {
		return fmt.Errorf("%d records failed; first error: %w", res.Errors, firstErr)
	}
	return nil
}

func runPerfConsume(ctx context.Context, args []string, s streams) error {
	out := s.out
	fs := newFlagSet("skein perf consume", s)
	bootstrap := bootstrapFlag(fs)
	topic := fs.String("topic", "perf", "topic to consume from (from the beginning)")
	messages := fs.Int64("messages", 100_000, "records to consume")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(splitList(*bootstrap)...), kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	start := time.Now()
	var n, bytes int64
	for n < *messages {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("consumed %d of %d records before the timeout", n, *messages)
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = errors.Join(ferr, err) })
		if ferr != nil {
			return ferr
		}
		fetches.EachRecord(func(r *kgo.Record) {
			n++
			bytes += int64(len(r.Value) + len(r.Key))
		})
	}
	secs := time.Since(start).Seconds()
	res := map[string]any{"records": n, "bytes": bytes, "seconds": secs,
		"records_per_sec": float64(n) / secs, "mb_per_sec": float64(bytes) / secs / (1 << 20)}
	if *asJSON {
		return json.NewEncoder(out).Encode(res)
	}
	fmt.Fprintf(out, "%d records consumed, %.1f records/sec (%.2f MB/sec) in %.2f s.\n", n, float64(n)/secs, float64(bytes)/secs/(1<<20), secs)
	return nil
}

// latencyStats collects per-record acknowledgement latencies.
type latencyStats struct {
	mu        sync.Mutex
	latencies []time.Duration
	errors    int64
	window    int64
}

func newLatencyStats(capacity int64) *latencyStats {
	return &latencyStats{latencies: make([]time.Duration, 0, min(capacity, 10_000_000))}
}

func (s *latencyStats) record(d time.Duration) {
	s.mu.Lock()
	s.latencies = append(s.latencies, d)
	s.window++
	s.mu.Unlock()
}

func (s *latencyStats) fail() {
	s.mu.Lock()
	s.errors++
	s.mu.Unlock()
}

func (s *latencyStats) startProgress(out io.Writer, every time.Duration, recordSize int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.mu.Lock()
				n := s.window
				s.window = 0
				var sum, maxLat time.Duration
				for _, l := range s.latencies[len(s.latencies)-int(n):] {
					sum += l
					maxLat = max(maxLat, l)
				}
				s.mu.Unlock()
				secs := every.Seconds()
				avg := 0.0
				if n > 0 {
					avg = float64(sum.Microseconds()) / float64(n) / 1000
				}
				fmt.Fprintf(out, "%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
					n, float64(n)/secs, float64(n)*float64(recordSize)/secs/(1<<20), avg, float64(maxLat.Microseconds())/1000)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// perfResult is the final summary, also printed as JSON with --json.
type perfResult struct {
	Records       int64   `json:"records"`
	Errors        int64   `json:"errors"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
	AvgLatencyMs  float64 `json:"avg_latency_ms"`
	MaxLatencyMs  float64 `json:"max_latency_ms"`
	P50Ms         float64 `json:"p50_ms"`
	P95Ms         float64 `json:"p95_ms"`
	P99Ms         float64 `json:"p99_ms"`
	P999Ms        float64 `json:"p999_ms"`
}

func (s *latencyStats) result(elapsed time.Duration, recordSize int) perfResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	lat := slices.Clone(s.latencies)
	slices.Sort(lat)
	n := int64(len(lat))
	res := perfResult{Records: n, Errors: s.errors, Seconds: elapsed.Seconds()}
	if n == 0 {
		return res
	}
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(p float64) float64 { return ms(lat[min(int(float64(n)*p), int(n)-1)]) }
	res.RecordsPerSec = float64(n) / elapsed.Seconds()
	res.MBPerSec = float64(n) * float64(recordSize) / elapsed.Seconds() / (1 << 20)
	res.AvgLatencyMs = ms(sum) / float64(n)
	res.MaxLatencyMs = ms(lat[n-1])
	res.P50Ms, res.P95Ms, res.P99Ms, res.P999Ms = pct(0.50), pct(0.95), pct(0.99), pct(0.999)
	return res
}
