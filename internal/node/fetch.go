package node

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
)

// fetchWaiter is a Fetch long poll. It holds no goroutine while it waits:
// partitions poke it when their high watermark moves, and a timer fires at
// max_wait. A poke re-reads in a short-lived goroutine and either answers
// or goes back to waiting.
type fetchWaiter struct {
	b      *Broker
	params api.FetchParams
	done   func([]api.FetchResult)
	parts  []*partition // resolved per request partition; nil if unknown here

	mu       sync.Mutex
	finished bool
	reading  bool // a re-read is running
	// positionRecorded is set after the first read: a follower's position
	// is what it asked for, recorded once per request.
	positionRecorded bool
	again            bool // a poke arrived during the re-read
	timer            *time.Timer
}

func (b *Broker) fetch(params api.FetchParams, done func([]api.FetchResult)) {
	w := &fetchWaiter{b: b, params: params, done: done, parts: make([]*partition, len(params.Partitions))}
	for i, fp := range params.Partitions {
		w.parts[i] = b.partition(fp.Topic, fp.Partition)
	}
	results, enough := w.read()
	w.positionRecorded = true
	if enough || params.MaxWait <= 0 {
		w.countOut(results)
		done(results)
		return
	}
	// Counted before any partition can poke it: from here on only answer
	// finishes it, and uncounts it.
	b.metrics.FetchParked(w.follower())
	// Lock order is partition.mu before fetchWaiter.mu (pokes come from
	// under the partition lock), so register without holding w.mu.
	for _, p := range w.parts {
		if p != nil {
			p.addWatcher(w)
		}
	}
	w.mu.Lock()
	if !w.finished {
		w.timer = time.AfterFunc(params.MaxWait, w.expire)
	}
	w.mu.Unlock()
	// Data may have arrived between the read and the registration.
	w.poke()
}

// read reads every partition within the request's byte budgets. enough is
// true when the answer should go now: min_bytes reached or an error to
// report.
func (w *fetchWaiter) read() (results []api.FetchResult, enough bool) {
	results = make([]api.FetchResult, len(w.params.Partitions))
	budget := int(w.params.MaxBytes)
	total := 0
	gotData := false
	for i, fp := range w.params.Partitions {
		p := w.parts[i]
		if p == nil {
			results[i] = api.FetchResult{Err: w.b.partitionError(fp.Topic, fp.Partition), HighWatermark: -1, LogStartOffset: -1}
			enough = true
			continue
		}
		limit := min(int(fp.MaxBytes), budget)
		if limit <= 0 && gotData {
			results[i] = api.FetchResult{HighWatermark: p.highWatermark.Load(), LogStartOffset: p.log.LogStartOffset()}
			continue
		}
		// The first partition with data returns at least one whole batch
		// even when it exceeds the limits, so a consumer never stalls on
		// one large batch.
		if err := w.admit(p, fp); err != nil {
			results[i] = api.FetchResult{Err: err, HighWatermark: -1, LogStartOffset: -1}
			enough = true
			continue
		}
		if d := p.divergence(fp, w.params.ReplicaID >= 0); d != nil {
			// Answer with where the fetcher's epoch really ends; it
			// truncates there before fetching again.
			results[i] = api.FetchResult{HighWatermark: p.highWatermark.Load(), LogStartOffset: p.log.LogStartOffset(), Diverging: d}
			enough = true
			continue
		}
		res, err := p.read(fp.Offset, max(limit, 0), !gotData, w.params.ReplicaID >= 0)
		res.Err = err
		if err != nil {
			enough = true
		}
		if n := len(res.Records); n > 0 {
			gotData = true
			total += n
			budget -= n
		}
		results[i] = res
	}
	if total >= int(max(w.params.MinBytes, 1)) {
		enough = true
	}
	return results, enough
}

// admit checks that this broker may serve the partition to this caller
// and, for a follower, records the position it fetches from.
func (w *fetchWaiter) admit(p *partition, fp api.FetchPartition) error {
	if !p.isLeader() {
		return kerr.NotLeaderForPartition
	}
	if err := p.checkLeaderEpoch(fp.CurrentLeaderEpoch); err != nil {
		return err
	}
	if w.params.ReplicaID >= 0 && !w.positionRecorded {
		return p.onFollowerFetch(w.params.ReplicaID, fp.Offset, time.Now())
	}
	return nil
}

// poke is called (under the partition's lock) when new data may be there.
func (w *fetchWaiter) poke() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	if w.reading {
		w.again = true
		return
	}
	w.reading = true
	go w.reread()
}

func (w *fetchWaiter) reread() {
	for {
		results, enough := w.read()
		w.mu.Lock()
		if w.finished {
			w.reading = false
			w.mu.Unlock()
			return
		}
		if enough {
			w.finishLocked()
			w.mu.Unlock()
			w.answer(results)
			return
		}
		if !w.again {
			w.reading = false
			w.mu.Unlock()
			return
		}
		w.again = false
		w.mu.Unlock()
	}
}

func (w *fetchWaiter) expire() {
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return
	}
	w.finishLocked()
	w.mu.Unlock()
	results, _ := w.read()
	w.answer(results)
}

// answer sends a parked fetch's answer. It leaves the purgatory gauge only
// now, after its last read: a reader of the gauge that sees no parked
// fetch knows that records appended afterwards reach no answer already
// counted out.
func (w *fetchWaiter) answer(results []api.FetchResult) {
	w.b.metrics.FetchUnparked(w.follower())
	w.countOut(results)
	w.done(results)
}

// follower reports whether a broker replica sent this fetch.
func (w *fetchWaiter) follower() bool { return w.params.ReplicaID >= 0 }

// finishLocked marks the waiter answered and unregisters it. The partition
// locks are taken in a goroutine: finishLocked may run inside a poke, which
// already holds one of them.
func (w *fetchWaiter) finishLocked() {
	w.finished = true
	if w.timer != nil {
		w.timer.Stop()
	}
	parts := w.parts
	go func() {
		for _, p := range parts {
			if p != nil {
				p.removeWatcher(w)
			}
		}
	}()
}

// divergence checks a follower's fetch against the leader's epoch history:
// if the epoch of the last batch the follower holds ends, in the leader's
// log, before the follower's fetch offset, the follower has a tail the
// leader does not (KIP-595's DivergingEpoch, the in-fetch form of
// KIP-101's truncation).
func (p *partition) divergence(fp api.FetchPartition, replica bool) *api.EpochEnd {
	if !replica || fp.LastFetchedEpoch < 0 {
		return nil
	}
	epoch, end := p.log.Epochs().EndOffsetFor(fp.LastFetchedEpoch, p.log.LogEndOffset())
	if epoch == fp.LastFetchedEpoch && end >= fp.Offset {
		return nil
	}
	if epoch < 0 {
		// The leader knows no such epoch: the answer still has to say
		// "diverging", so it names the log start; the follower then asks
		// with OffsetForLeaderEpoch, whose rule handles this case.
		return &api.EpochEnd{Epoch: -1, EndOffset: p.log.LogStartOffset()}
	}
	return &api.EpochEnd{Epoch: epoch, EndOffset: end}
}

// countOut adds what a fetch returns to the bytes-out metrics: per topic
// for consumers, as replication traffic for followers.
func (w *fetchWaiter) countOut(results []api.FetchResult) {
	for i, r := range results {
		if len(r.Records) == 0 || w.parts[i] == nil {
			continue
		}
		if w.params.ReplicaID >= 0 {
			w.b.metrics.AddReplicationBytesOut(int64(len(r.Records)))
			continue
		}
		var records int64
		batch.Split(r.Records, func(b []byte) error {
			if h, err := batch.ParseHeader(b); err == nil {
				records += int64(h.RecordCount)
			}
			return nil
		})
		w.b.metrics.AddBytesOut(w.parts[i].topic, int64(len(r.Records)), records)
	}
}
