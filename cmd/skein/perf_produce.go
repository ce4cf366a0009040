package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/hdrhist"
)

// perfReportInterval is how often a progress line is printed.
const perfReportInterval = 5 * time.Second

// perfProduceFlags is one run's settings. The defaults are the load
// generator the throughput comparisons use (issue #14): 1 MiB batches,
// 100,000 buffered records, no compression, and no per-record latency
// recording unless the rate is fixed (recording costs client CPU that a
// small machine shares with the brokers).
type perfProduceFlags struct {
	bootstrap, topic, acks, compression, label string
	// cluster reaches the brokers (--bootstrap-server, --command-config).
	cluster                                 *clusterFlags
	numRecords                              int64
	recordSize, producers, batchBytes       int
	buffered, partitions, replicationFactor int
	throughput                              int
	rateMB                                  float64
	duration, linger                        time.Duration
	latency, asJSON                         bool
	configs                                 keyValuesFlag
	// transactionalID (Kafka's --transactional-id) makes the producers
	// transactional, producer p with id "<transactionalID>-<p>", each
	// committing a transaction every transactionSize of its records.
	transactionalID string
	transactionSize int
}

// perfResult is the summary of one run; --json prints it as one line.
type perfResult struct {
	Label      string `json:"label,omitempty"`
	Mode       string `json:"mode"` // "throughput" or "fixed-rate"
	Topic      string `json:"topic"`
	Producers  int    `json:"producers"`
	RecordSize int    `json:"record_size"`
	Acks       string `json:"acks"`
	// TransactionSize is the records per committed transaction (0: not
	// transactional).
	TransactionSize int     `json:"transaction_size,omitempty"`
	TargetPerSec    float64 `json:"target_records_per_sec,omitempty"`
	Records         int64   `json:"records"`
	Errors          int64   `json:"errors"`
	Seconds         float64 `json:"seconds"`
	RecordsPerSec   float64 `json:"records_per_sec"`
	MBPerSec        float64 `json:"mb_per_sec"` // MiB of record values per second
	// Latencies, from when a record was due (fixed rate: its slot in the
	// schedule, so a stalled broker is not hidden by the client sending
	// less) or handed to the client, to its acknowledgement. Absent when
	// not recorded.
	AvgLatencyMs *float64 `json:"avg_latency_ms,omitempty"`
	P50Ms        *float64 `json:"p50_ms,omitempty"`
	P95Ms        *float64 `json:"p95_ms,omitempty"`
	P99Ms        *float64 `json:"p99_ms,omitempty"`
	P999Ms       *float64 `json:"p999_ms,omitempty"`
	MaxLatencyMs *float64 `json:"max_latency_ms,omitempty"`
}

func runPerfProduce(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein perf produce", s)
	var f perfProduceFlags
	cluster := clusterFlag(fs)
	fs.StringVar(&f.topic, "topic", "perf", "topic to produce to")
	fs.Int64Var(&f.numRecords, "num-records", 100_000, "records to send (over all producers)")
	fs.IntVar(&f.recordSize, "record-size", 1024, "bytes per record value")
	fs.IntVar(&f.throughput, "throughput", -1, "fixed rate in records per second over all producers (-1: as fast as possible)")
	fs.Float64Var(&f.rateMB, "rate-mb", 0, "fixed rate in MiB of record values per second (instead of --throughput)")
	fs.DurationVar(&f.duration, "duration", 0, "at a fixed rate, run this long instead of --num-records")
	fs.IntVar(&f.producers, "producers", 1, "producer clients, each with its own connections")
	fs.StringVar(&f.acks, "acks", "all", "acks: 0, 1 or all")
	fs.StringVar(&f.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.IntVar(&f.batchBytes, "batch-bytes", 1<<20, "largest record batch a producer builds")
	fs.IntVar(&f.buffered, "buffered-records", 100_000, "records a producer buffers before Produce blocks")
	fs.DurationVar(&f.linger, "linger", 5*time.Millisecond, "how long a producer waits to fill a batch")
	fs.BoolVar(&f.latency, "latency", false, "record per-record latency also when not at a fixed rate")
	fs.IntVar(&f.partitions, "partitions", 0, "create the topic first with this many partitions (0: produce to it as it is)")
	fs.IntVar(&f.replicationFactor, "replication-factor", -1, "with --partitions: replicas per partition (-1: the broker default)")
	fs.Var(&f.configs, "config", "with --partitions: topic property key=value (repeatable)")
	fs.StringVar(&f.transactionalID, "transactional-id", "", "transactional.id prefix: each producer is transactional (id <prefix>-<n>) and commits a transaction every --transaction-size records")
	fs.IntVar(&f.transactionSize, "transaction-size", 1000, "with --transactional-id: records per transaction, per producer")
	fs.StringVar(&f.label, "label", "", "name of the run, copied into the JSON line")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as one JSON line (and no progress lines)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f.bootstrap, f.cluster = cluster.bootstrap, cluster
	perSec, err := f.check()
	if err != nil {
		return err
	}
	progress := s.out
	if f.asJSON {
		progress = io.Discard
	}
	if f.partitions > 0 {
		if err := createPerfTopic(ctx, &f, progress); err != nil {
			return err
		}
	}
	res, firstErr, err := runProducers(ctx, &f, perSec, progress)
	if err != nil {
		return err
	}
	if f.asJSON {
		if err := json.NewEncoder(s.out).Encode(res); err != nil {
			return err
		}
	} else {
		printPerfResult(s.out, res)
	}
	if res.Errors > 0 {
		return fmt.Errorf("%d records failed; first error: %w", res.Errors, firstErr)
	}
	return nil
}

// check validates the flags and returns the fixed rate in records per
// second (0: unthrottled). With --duration it sets numRecords.
func (f *perfProduceFlags) check() (float64, error) {
	if f.recordSize < 0 || f.recordSize > 64<<20 {
		return 0, errors.New("--record-size must be between 0 and 64 MiB")
	}
	if f.producers < 1 || f.producers > 1024 {
		return 0, errors.New("--producers must be between 1 and 1024")
	}
	if f.batchBytes < 1 || f.buffered < 1 {
		return 0, errors.New("--batch-bytes and --buffered-records must be positive")
	}
	if f.partitions < 0 || f.partitions > math.MaxInt32 || f.replicationFactor == 0 || f.replicationFactor < -1 || f.replicationFactor > math.MaxInt16 {
		return 0, errors.New("--partitions must be positive (or 0: do not create), --replication-factor positive or -1")
	}
	if f.partitions == 0 && len(f.configs) > 0 {
		return 0, errors.New("--config needs --partitions: topic properties are set when the topic is created")
	}
	if f.rateMB < 0 || (f.rateMB > 0 && f.throughput > 0) {
		return 0, errors.New("give at most one of --throughput and --rate-mb, and a positive one")
	}
	var perSec float64
	switch {
	case f.rateMB > 0:
		perSec = f.rateMB * (1 << 20) / float64(max(f.recordSize, 1))
	case f.throughput > 0:
		perSec = float64(f.throughput)
	}
	if f.duration < 0 || (f.duration > 0 && perSec == 0) {
		return 0, errors.New("--duration needs a fixed rate (--throughput or --rate-mb)")
	}
	if f.duration > 0 {
		f.numRecords = int64(math.Ceil(perSec * f.duration.Seconds()))
	}
	if f.numRecords <= 0 {
		return 0, errors.New("--num-records must be positive")
	}
	if f.transactionalID != "" && (f.transactionSize < 1 || f.transactionSize > f.buffered || f.acks != "all") {
		return 0, errors.New("--transactional-id needs --acks all and a --transaction-size between 1 and --buffered-records (a transaction's records are buffered until it commits)")
	}
	return perSec, nil
}

// createPerfTopic creates the topic with the run's partitions and configs;
// one that exists already is used as it is (said on the progress output).
func createPerfTopic(ctx context.Context, f *perfProduceFlags, progress io.Writer) error {
	cfg, err := uniqueConfigs(f.configs)
	if err != nil {
		return err
	}
	cl, err := newClient(f.cluster)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(f.partitions), int16(f.replicationFactor), cfg, f.topic)
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists) || errors.Is(resp.Err, kerr.TopicAlreadyExists):
		fmt.Fprintf(progress, "Topic %s exists; producing to it as it is.\n", f.topic)
		return nil
	case err != nil:
		return fmt.Errorf("create topic %q: %w", f.topic, explainError(err))
	case resp.Err != nil:
		return fmt.Errorf("create topic %q: %w", f.topic, withBrokerMessage(resp.Err, resp.ErrMessage))
	}
	return nil
}

// perfRun is the state the producers of one run share.
type perfRun struct {
	hist     *hdrhist.Histogram // nil: latency not recorded
	acked    atomic.Int64
	failed   atomic.Int64
	errOnce  sync.Once
	firstErr error
}

// done is every record's promise: kgo calls it once it is finished with
// the record, which the run then reuses (no allocation per record).
func (r *perfRun) done(pool *sync.Pool) func(*kgo.Record, error) {
	return func(rec *kgo.Record, err error) {
		if err != nil {
			r.failed.Add(1)
			r.errOnce.Do(func() { r.firstErr = err })
		} else {
			r.acked.Add(1)
			if r.hist != nil {
				r.hist.Record(time.Since(rec.Timestamp))
			}
		}
		pool.Put(rec)
	}
}

func runProducers(ctx context.Context, f *perfProduceFlags, perSec float64, progress io.Writer) (perfResult, error, error) {
	opts, err := f.cluster.opts()
	if err != nil {
		return perfResult{}, nil, err
	}
	opts = append(opts,
		kgo.DefaultProduceTopic(f.topic), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(f.linger), kgo.ProducerBatchMaxBytes(int32(min(f.batchBytes, math.MaxInt32))),
		kgo.MaxBufferedRecords(f.buffered),
	)
	ackOpt, err := parseAcks(f.acks)
	if err != nil {
		return perfResult{}, nil, err
	}
	codec, err := parseCompression(f.compression)
	if err != nil {
		return perfResult{}, nil, err
	}
	opts = append(append(opts, ackOpt...), kgo.ProducerBatchCompression(codec))
	txnSize := 0
	clients := make([]*kgo.Client, f.producers)
	for i := range clients {
		copts := opts
		if f.transactionalID != "" {
			txnSize = f.transactionSize
			copts = append(slices.Clone(opts), kgo.TransactionalID(fmt.Sprintf("%s-%d", f.transactionalID, i)))
		}
		if clients[i], err = kgo.NewClient(copts...); err != nil {
			return perfResult{}, nil, err
		}
		defer clients[i].Close()
	}
	run := &perfRun{}
	if perSec > 0 || f.latency {
		run.hist = new(hdrhist.Histogram)
	}
	value := make([]byte, f.recordSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	stopProgress := startPerfProgress(progress, &run.acked, f.recordSize)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for p, cl := range clients {
		n := f.numRecords / int64(f.producers)
		if int64(p) < f.numRecords%int64(f.producers) {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = produceShare(ctx, cl, run, value, n, perSec/float64(f.producers), txnSize, start)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	if ctx.Err() != nil {
		return perfResult{}, nil, errors.New("interrupted")
	}
	if err := errors.Join(errs...); err != nil {
		return perfResult{}, nil, err
	}
	res := perfResult{
		Label: f.label, Mode: "throughput", Topic: f.topic, Producers: f.producers, RecordSize: f.recordSize, Acks: f.acks,
		TransactionSize: txnSize,
		Records:         run.acked.Load(), Errors: run.failed.Load(), Seconds: elapsed.Seconds(),
	}
	if perSec > 0 {
		res.Mode, res.TargetPerSec = "fixed-rate", perSec
	}
	res.RecordsPerSec = float64(res.Records) / res.Seconds
	res.MBPerSec = res.RecordsPerSec * float64(f.recordSize) / (1 << 20)
	if h := run.hist; h != nil && h.Count() > 0 {
		ms := func(d time.Duration) *float64 { v := float64(d) / float64(time.Millisecond); return &v }
		res.AvgLatencyMs, res.MaxLatencyMs = ms(h.Mean()), ms(h.Max())
		res.P50Ms, res.P95Ms, res.P99Ms, res.P999Ms = ms(h.Quantile(0.5)), ms(h.Quantile(0.95)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999))
	}
	return res, run.firstErr, nil
}

// produceShare sends one producer's n records, at perSec records per
// second when that is positive, and waits for all of them. With txnSize
// (a transactional client), every txnSize records (and the rest at the
// end) are one transaction, flushed and committed before the next
// begins, as Kafka's producer perf test commits.
func produceShare(ctx context.Context, cl *kgo.Client, run *perfRun, value []byte, n int64, perSec float64, txnSize int, start time.Time) error {
	pool := &sync.Pool{New: func() any { return new(kgo.Record) }}
	done := run.done(pool)
	var interval float64
	if perSec > 0 {
		interval = float64(time.Second) / perSec
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := int64(0); i < n && ctx.Err() == nil; i++ {
		if txnSize > 0 && i%int64(txnSize) == 0 {
			if i > 0 {
				if err := commitPerfTxn(ctx, cl); err != nil {
					return err
				}
			}
			if err := cl.BeginTransaction(); err != nil {
				return fmt.Errorf("begin transaction: %w", err)
			}
		}
		rec := pool.Get().(*kgo.Record)
		*rec = kgo.Record{Value: value}
		if interval > 0 {
			// The record's slot in the schedule; latency counts from it.
			due := start.Add(time.Duration(float64(i) * interval))
			if wait := time.Until(due); wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-ctx.Done():
				}
			}
			rec.Timestamp = due
		} else if run.hist != nil {
			rec.Timestamp = time.Now()
		}
		cl.Produce(ctx, rec, done)
	}
	if txnSize > 0 {
		if err := commitPerfTxn(ctx, cl); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	}
	if err := cl.Flush(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// commitPerfTxn flushes the open transaction's records and commits it.
func commitPerfTxn(ctx context.Context, cl *kgo.Client) error {
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}

// startPerfProgress prints the acknowledged rate every perfReportInterval.
func startPerfProgress(out io.Writer, acked *atomic.Int64, recordSize int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(perfReportInterval)
		defer t.Stop()
		last := int64(0)
		for {
			select {
			case <-done:
				return
			case <-t.C:
				now := acked.Load()
				n := now - last
				last = now
				secs := perfReportInterval.Seconds()
				fmt.Fprintf(out, "%d records sent, %.1f records/sec (%.2f MB/sec).\n",
					n, float64(n)/secs, float64(n)*float64(recordSize)/secs/(1<<20))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func printPerfResult(out io.Writer, res perfResult) {
	fmt.Fprintf(out, "%d records sent, %.1f records/sec (%.2f MB/sec)", res.Records, res.RecordsPerSec, res.MBPerSec)
	if res.P50Ms != nil {
		fmt.Fprintf(out, ", %.2f ms avg latency, %.2f ms max latency, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th",
			*res.AvgLatencyMs, *res.MaxLatencyMs, *res.P50Ms, *res.P95Ms, *res.P99Ms, *res.P999Ms)
	}
	fmt.Fprintln(out, ".")
}
