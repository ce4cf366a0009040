package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	commands["perf"] = command{summary: "measure produce or consume throughput and latency (like kafka-*-perf-test)", run: clientCommand(runPerf)}
}

func runPerf(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, "usage: skein perf produce|consume|partitions [flags]", map[string]clientRun{
		"produce":    runPerfProduce,
		"consume":    runPerfConsume,
		"partitions": runPerfPartitions,
	})
}

func runPerfConsume(ctx context.Context, args []string, s streams) error {
	out := s.out
	fs := newFlagSet("skein perf consume", s)
	bootstrap := clusterFlag(fs)
	topic := fs.String("topic", "perf", "topic to consume from (from the beginning)")
	messages := fs.Int64("messages", 100_000, "records to consume")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	isolation := fs.String("isolation-level", "read_uncommitted", "isolation.level: read_uncommitted, or read_committed (only committed transactions, up to the last stable offset)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	level := kgo.ReadUncommitted()
	switch *isolation {
	case "read_uncommitted":
	case "read_committed":
		level = kgo.ReadCommitted()
	default:
		return fmt.Errorf("--isolation-level %q: want read_uncommitted or read_committed", *isolation)
	}
	opts, err := bootstrap.opts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20), kgo.FetchIsolationLevel(level))...)
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
	res := map[string]any{"records": n, "bytes": bytes, "seconds": secs, "isolation_level": *isolation,
		"records_per_sec": float64(n) / secs, "mb_per_sec": float64(bytes) / secs / (1 << 20)}
	if *asJSON {
		return json.NewEncoder(out).Encode(res)
	}
	fmt.Fprintf(out, "%d records consumed, %.1f records/sec (%.2f MB/sec) in %.2f s.\n", n, float64(n)/secs, float64(bytes)/secs/(1<<20), secs)
	return nil
}
