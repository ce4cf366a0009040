package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	commands["produce"] = command{summary: "produce lines from stdin as records (like kafka-console-producer)", run: clientCommand(runProduce)}
}

const (
	// maxReportedFailures bounds the failure lines printed in the summary;
	// the count of all failures is always printed.
	maxReportedFailures = 10
	// maxLineLimit bounds --max-line-bytes: a line is buffered whole.
	maxLineLimit = 64 << 20
)

func runProduce(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein produce", s)
	bootstrap := clusterFlag(fs)
	topic := fs.String("topic", "", "topic to produce to (required)")
	keySeparator := fs.String("key-separator", "", "split each line at the first occurrence into key and value (default: no key, the line is the value)")
	var headers keyValuesFlag
	fs.Var(&headers, "header", "record header key=value added to every record (repeatable)")
	acks := fs.String("acks", "all", "acks: 0, 1 or all")
	compression := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	partition := fs.Int("partition", -1, "produce every record to this partition (-1: partition by key, or spread keyless records)")
	maxLineBytes := fs.Int("max-line-bytes", 1<<20, "longest input line accepted")
	timeout := fs.Duration("timeout", 2*time.Minute, "fail a record not acknowledged within this long (Kafka's delivery.timeout.ms)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; records are read from stdin, one per line", fs.Args())
	}
	if *topic == "" {
		return errors.New("--topic is required")
	}
	if *partition < -1 || *partition > math.MaxInt32 {
		return fmt.Errorf("--partition %d: want a partition number, or -1", *partition)
	}
	if *maxLineBytes <= 0 || *maxLineBytes > maxLineLimit {
		return fmt.Errorf("--max-line-bytes %d: want 1 to %d", *maxLineBytes, maxLineLimit)
	}
	if *timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration", *timeout)
	}
	opts, err := bootstrap.opts()
	if err != nil {
		return err
	}
	brokers := bootstrap.seeds()
	opts = append(opts,
		kgo.DefaultProduceTopic(*topic),
		// As Kafka's console producer: the broker's auto.create.topics.enable decides.
		kgo.AllowAutoTopicCreation(),
		kgo.RecordDeliveryTimeout(*timeout),
	)
	ackOpts, err := parseAcks(*acks)
	if err != nil {
		return err
	}
	opts = append(opts, ackOpts...)
	codec, err := parseCompression(*compression)
	if err != nil {
		return err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if *partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("client for %s: %w", bootstrap, err)
	}
	defer cl.Close()
	if err := reachable(ctx, cl, brokers); err != nil {
		return err
	}

	start := time.Now()
	tally := &produceTally{}
	recordHeaders := make([]kgo.RecordHeader, len(headers))
	for i, h := range headers {
		recordHeaders[i] = kgo.RecordHeader{Key: h.key, Value: []byte(h.value)}
	}
	lines, inputErr := readLines(ctx, s.in, *maxLineBytes)
	lineNo := 0
	for {
		var line []byte
		more := false
		select {
		case line, more = <-lines:
		case <-ctx.Done():
		}
		if !more {
			break
		}
		lineNo++
		rec, err := lineRecord(line, *keySeparator, recordHeaders)
		if err != nil {
			tally.fail(lineNo, err)
			continue
		}
		rec.Partition = int32(*partition)
		n := lineNo
		// Produce blocks while the client's buffer is full, which bounds
		// memory when stdin is faster than the cluster.
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				tally.fail(n, err)
				return
			}
			tally.ack()
		})
	}
	flushErr := cl.Flush(ctx)
	tally.summarize(s, *topic, lineNo, time.Since(start))
	switch {
	case ctx.Err() != nil:
		return errors.New("interrupted")
	case *inputErr != nil:
		return fmt.Errorf("read stdin: %w", *inputErr)
	case flushErr != nil:
		return fmt.Errorf("flush: %w", flushErr)
	case tally.failures() > 0:
		return fmt.Errorf("%d of %d records failed", tally.failures(), lineNo)
	}
	return nil
}

// produceConnectTimeout bounds the first contact with the cluster: a
// producer that cannot reach any broker would otherwise hold every record
// for --timeout before saying so.
const produceConnectTimeout = 5 * time.Second

// reachable fails, naming the addresses tried, when no broker answers
// within produceConnectTimeout.
func reachable(ctx context.Context, cl *kgo.Client, brokers []string) error {
	pctx, cancel := context.WithTimeout(ctx, produceConnectTimeout)
	defer cancel()
	err := cl.Ping(pctx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return errors.New("interrupted")
	}
	return fmt.Errorf("no broker reachable at %s within %v: %w", strings.Join(brokers, ", "), produceConnectTimeout, err)
}

// readLines reads lines on a goroutine, so that Ctrl-C ends the command
// even while it waits for input. Each line is a fresh slice. The error
// may be read once the channel is closed; reading stops when ctx ends.
func readLines(ctx context.Context, in io.Reader, maxLineBytes int) (<-chan []byte, *error) {
	lines := make(chan []byte, 64)
	readErr := new(error)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, min(64<<10, maxLineBytes)), maxLineBytes)
		n := 0
		for sc.Scan() {
			n++
			select {
			case lines <- bytes.Clone(sc.Bytes()):
			case <-ctx.Done():
				return
			}
		}
		*readErr = sc.Err()
		if errors.Is(*readErr, bufio.ErrTooLong) {
			*readErr = fmt.Errorf("line %d is longer than --max-line-bytes (%d bytes)", n+1, maxLineBytes)
		}
	}()
	return lines, readErr
}

// lineRecord makes a record from one input line, splitting off the key at
// the first separator when a separator is set. An empty line is an empty
// value, not a null one (a null value is a tombstone on compacted topics).
func lineRecord(line []byte, keySeparator string, headers []kgo.RecordHeader) (*kgo.Record, error) {
	rec := &kgo.Record{Headers: headers, Value: line}
	if keySeparator != "" {
		key, value, ok := bytes.Cut(line, []byte(keySeparator))
		if !ok {
			return nil, fmt.Errorf("no key separator %q in the line", keySeparator)
		}
		rec.Key, rec.Value = key, value
	}
	if rec.Value == nil {
		rec.Value = []byte{}
	}
	return rec, nil
}

// produceTally counts records as their acknowledgements arrive (on the
// client's goroutines) and keeps the first failures for the summary.
type produceTally struct {
	mu       sync.Mutex
	acked    int
	failed   int
	reported []string
}

func (t *produceTally) failures() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *produceTally) ack() {
	t.mu.Lock()
	t.acked++
	t.mu.Unlock()
}

func (t *produceTally) fail(line int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed++
	if len(t.reported) < maxReportedFailures {
		t.reported = append(t.reported, fmt.Sprintf("line %d: %s", line, kafkaErrorLine(explainError(err), "")))
	}
}

// summarize prints the outcome to the error stream, keeping stdout free
// for pipelines.
func (t *produceTally) summarize(s streams, topic string, lines int, elapsed time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(s.err, "%d lines read, %d records acknowledged by topic %s, %d failed (%v).\n",
		lines, t.acked, topic, t.failed, elapsed.Round(time.Millisecond))
	for _, f := range t.reported {
		fmt.Fprintf(s.err, "  %s\n", f)
	}
	if t.failed > len(t.reported) {
		fmt.Fprintf(s.err, "  ... and %d more failures\n", t.failed-len(t.reported))
	}
}
