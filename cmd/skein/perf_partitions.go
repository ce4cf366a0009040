package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// perfPartitionsLimit bounds --partitions: beyond it the metadata of the
// cluster alone is more than a laptop-sized broker is meant to hold.
const perfPartitionsLimit = 1_000_000

// runPerfPartitions creates many partitions (topics of --per-topic) and
// measures how long the cluster takes to create them and to have every
// one led with its whole replica set in sync: the partition-count half
// of issue #14, which scripts/partitions-bench.sh drives.
func runPerfPartitions(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein perf partitions", s)
	bootstrap := clusterFlag(fs)
	prefix := fs.String("topic-prefix", "parts", "topics are named PREFIX-0, PREFIX-1, ...")
	total := fs.Int("partitions", 10_000, "partitions to create in all")
	perTopic := fs.Int("per-topic", 100, "partitions per topic")
	rf := fs.Int("replication-factor", 3, "replicas per partition")
	perRequest := fs.Int("topics-per-request", 10, "topics per CreateTopics request")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	poll := fs.Duration("poll", 250*time.Millisecond, "how often to read the metadata while waiting for every partition to be in sync")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *total < 1 || *total > perfPartitionsLimit:
		return fmt.Errorf("--partitions %d: want 1 to %d", *total, perfPartitionsLimit)
	case *perTopic < 1 || *perTopic > *total:
		return fmt.Errorf("--per-topic %d: want 1 to --partitions", *perTopic)
	case *rf < 1 || *rf > 32:
		return fmt.Errorf("--replication-factor %d: want 1 to 32", *rf)
	case *perRequest < 1 || *perRequest > 1000:
		return fmt.Errorf("--topics-per-request %d: want 1 to 1000", *perRequest)
	case *poll <= 0:
		return fmt.Errorf("--poll %s: want a positive duration", *poll)
	}
	opts, err := bootstrap.opts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(timeout.Milliseconds()))
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	// Topics and their sizes: the last one takes the remainder.
	var names []string
	sizes := map[string]int32{}
	for left, i := *total, 0; left > 0; i++ {
		n := min(left, *perTopic)
		name := fmt.Sprintf("%s-%d", *prefix, i)
		names = append(names, name)
		sizes[name] = int32(n)
		left -= n
	}

	start := time.Now()
	for i := 0; i < len(names); i += *perRequest {
		batch := names[i:min(i+*perRequest, len(names))]
		// Topics of one request share a size but for the last one.
		bySize := map[int32][]string{}
		for _, n := range batch {
			bySize[sizes[n]] = append(bySize[sizes[n]], n)
		}
		for size, ns := range bySize {
			if err := createTopicsRetrying(ctx, adm, size, int16(*rf), ns); err != nil {
				return err
			}
		}
	}
	created := time.Since(start)

	tick := time.NewTicker(*poll)
	defer tick.Stop()
	var led, inSync int
	for {
		led, inSync, err = partitionsInSync(ctx, adm, names, sizes, *rf)
		if err != nil {
			return err
		}
		if inSync == *total {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %s, %d of %d partitions led and %d in sync: %w",
				time.Since(start).Round(time.Millisecond), led, *total, inSync, ctx.Err())
		case <-tick.C:
		}
	}
	synced := time.Since(start)
	res := map[string]any{"partitions": *total, "topics": len(names), "replication_factor": *rf,
		"created_seconds": created.Seconds(), "in_sync_seconds": synced.Seconds()}
	if *asJSON {
		return json.NewEncoder(s.out).Encode(res)
	}
	fmt.Fprintf(s.out, "%d partitions in %d topics (RF=%d) created in %.2f s, all led and in sync after %.2f s.\n",
		*total, len(names), *rf, created.Seconds(), synced.Seconds())
	return nil
}

// partitionsInSync counts, from one Metadata answer, the partitions of
// names that have a leader, and those whose ISR is their whole replica
// set of rf replicas. A topic the answer lacks, or one with fewer
// partitions than it was created with, counts as not yet there.
func partitionsInSync(ctx context.Context, adm *kadm.Client, names []string, sizes map[string]int32, rf int) (led, inSync int, err error) {
	md, err := adm.Metadata(ctx, names...)
	if err != nil {
		return 0, 0, fmt.Errorf("metadata: %w", explainError(err))
	}
	for _, n := range names {
		t, ok := md.Topics[n]
		if !ok || t.Err != nil {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition >= sizes[n] || p.Leader < 0 || p.Err != nil {
				continue
			}
			led++
			if len(p.Replicas) == rf && len(p.ISR) == rf {
				inSync++
			}
		}
	}
	return led, inSync, nil
}

// createTopicsRetrying creates the topics names, asking again for those
// whose creation timed out (REQUEST_TIMED_OUT: the controller may yet
// commit it, or has) until ctx ends. The names are this run's, so one
// that already exists was created by an earlier attempt.
func createTopicsRetrying(ctx context.Context, adm *kadm.Client, partitions int32, rf int16, names []string) error {
	for len(names) > 0 {
		resps, err := adm.CreateTopics(ctx, partitions, rf, nil, names...)
		if err != nil {
			return fmt.Errorf("create topics: %w", explainError(err))
		}
		var again []string
		for _, n := range names {
			r, ok := resps[n]
			switch {
			case !ok:
				return fmt.Errorf("create topic %q: the cluster did not answer for it", n)
			case r.Err == nil, errors.Is(r.Err, kerr.TopicAlreadyExists):
			case errors.Is(r.Err, kerr.RequestTimedOut) && ctx.Err() == nil:
				again = append(again, n)
			default:
				return fmt.Errorf("create topic %q: %w (%s)", n, explainError(r.Err), r.ErrMessage)
			}
		}
		names = again
	}
	return nil
}
