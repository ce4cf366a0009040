package node

import (
	"sync"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/invariant"
	"github.com/skein-log/skein/internal/replica"
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
	// slots are w's places in its partitions' watchers, by request
	// partition (see watch); each guarded by that partition's lock.
	slots []int32

	mu       sync.Mutex
	finished bool
	reading  bool // a re-read is running
	// positionRecorded is set after the first read: a follower's position
	// is what it asked for, recorded once per request.
	positionRecorded bool
	again            bool // a poke arrived during the re-read
	timer            *time.Timer
	// last is the latest read that went on waiting, kept when it holds
	// no records, errors or divergences, with snap, its partitions'
	// state taken before it. A fetch whose max wait expires with no
	// re-read running and no partition changed since answers last
	// rather than reading every partition again (Kafka's DelayedFetch
	// completes on expiry with what it has).
	last []api.FetchResult
	snap []partSnap
}

// partSnap is what may change a partition's fetch answer: its
// generation (bumped by every step that wakes waiting fetches or moves
// the high watermark or last stable offset), its log end and log start.
type partSnap struct {
	gen, dataGen  uint64
	leo, logStart int64
}

func (b *Broker) fetch(params api.FetchParams, done func([]api.FetchResult)) {
	w := &fetchWaiter{b: b, params: params, done: done, parts: make([]*partition, len(params.Partitions))}
	b.fetchPartitions(params.Partitions, w.parts)
	snap := make([]partSnap, len(w.parts))
	results, enough := w.read(snap)
	w.positionRecorded = true
	if enough || params.MaxWait <= 0 {
		w.countOut(results)
		w.handOver(results)
		done(results)
		return
	}
	w.discard(results)
	w.keepLocked(results, snap) // nothing else sees w yet
	// Counted before any partition can poke it: from here on only answer
	// finishes it, and uncounts it.
	b.metrics.FetchParked(w.follower())
	// Lock order is partition.mu before fetchWaiter.mu (pokes come from
	// under the partition lock), so register without holding w.mu.
	//
	// Data may have arrived between the read and the registration: a
	// step that changed a partition bumped its generation before poking
	// its watchers, so either the poke reached w or the check that
	// follows each registration sees it. The check asks only about what
	// would have poked w: a follower's own position moves the high
	// watermark during its read, which pokes consumers, not followers.
	// (An expiry still compares the whole generation, so an idle
	// follower's answer carries the current high watermark.)
	w.slots = make([]int32, len(w.parts))
	for i := range w.slots {
		w.slots[i] = -1
	}
	changed := false
	for i, p := range w.parts {
		if p != nil {
			p.addWatcher(w, i)
			changed = changed || !w.partUnchanged(i, snap, true)
		}
	}
	w.mu.Lock()
	finished := w.finished
	if !finished {
		w.timer = time.AfterFunc(params.MaxWait, w.expire)
	}
	w.mu.Unlock()
	if finished {
		// A poke from a partition registered first answered it while
		// the others were being registered: the answer's unhook may have
		// run before those, so unhook again, now that all are in.
		w.unhook()
		return
	}
	w.mu.Lock()
	reading, last, kept := w.reading, w.last, w.snap
	w.mu.Unlock()
	if reading {
		return
	}
	switch {
	case last == nil:
		w.poke()
	case len(kept) > 0 && &kept[0] != &snap[0]:
		// A re-read, poked during the registration, kept a later
		// read: check against that.
		if !w.unchangedSince(kept, true) {
			w.poke()
		}
	case changed:
		w.poke()
	}
}

// snapshot is the state of p, taken before a read of it.
func (p *partition) snapshot() partSnap {
	return partSnap{gen: p.generation.Load(), dataGen: p.dataGeneration.Load(),
		leo: p.log.LogEndOffset(), logStart: p.log.LogStartOffset()}
}

// unchanged reports whether no partition changed since snap was taken.
func (w *fetchWaiter) unchanged(snap []partSnap) bool { return w.unchangedSince(snap, false) }

// unchangedSince is unchanged; with wakes, only in what would have poked
// w meanwhile: a consumer is poked whenever generation moves, a follower
// only when dataGeneration does (replica.Ready.WakeFollowers).
func (w *fetchWaiter) unchangedSince(snap []partSnap, wakes bool) bool {
	for i := range w.parts {
		if !w.partUnchanged(i, snap, wakes) {
			return false
		}
	}
	return true
}

// partUnchanged is unchangedSince for request partition i alone.
func (w *fetchWaiter) partUnchanged(i int, snap []partSnap, wakes bool) bool {
	p := w.parts[i]
	if p == nil {
		return true
	}
	gen, was := p.generation.Load(), snap[i].gen
	if wakes && w.follower() {
		gen, was = p.dataGeneration.Load(), snap[i].dataGen
	}
	return !p.offline.Load() && gen == was &&
		p.log.LogEndOffset() == snap[i].leo && p.log.LogStartOffset() == snap[i].logStart
}

// keepLocked keeps a read that goes on waiting (its pooled buffers
// already given back) as last, if it can answer an expiry as is.
func (w *fetchWaiter) keepLocked(results []api.FetchResult, snap []partSnap) {
	w.last, w.snap = nil, nil
	for _, r := range results {
		if len(r.Records) > 0 || r.Err != nil || r.Diverging != nil {
			return
		}
	}
	for i := range results {
		results[i].Records, results[i].Buffer = nil, nil
	}
	w.last, w.snap = results, snap
}

// read reads every partition with the shared fetch read plan
// (replica.ReadFetch). enough is true when the answer should go now.
// With snap (one per request partition) each partition's state is
// taken there just before it is read.
// With params.Recycle set the records are read into pooled buffers,
// which answer hands over and discard gives back. A follower's fetch is
// held to the leader's replication throttle.
func (w *fetchWaiter) read(snap []partSnap) (results []api.FetchResult, enough bool) {
	var throttle replica.Throttle
	if lr := w.b.throttle.leaderRead(w.b.Image(), w); lr != nil {
		throttle = lr
	}
	return replica.ReadFetch(w.params, func(i int) (replica.Source, error) {
		if p := w.parts[i]; p != nil {
			if snap != nil {
				snap[i] = p.snapshot()
			}
			if w.params.Recycle != nil {
				return pooledReads{p}, nil
			}
			return p, nil
		}
		fp := w.params.Partitions[i]
		return nil, w.b.partitionError(fp.Topic, fp.Partition)
	}, !w.positionRecorded, time.Now().UnixMilli(), throttle)
}

// Admit is replica.Source.Admit: this broker leads the partition, the
// caller's epoch matches (KIP-320), and a follower's position is recorded.
// A fetch reads holding no lock (on the connection's reader, a re-read's
// goroutine or the max-wait timer's), so the acknowledgements a
// follower's position completes are answered right here.
//
// An idle follower's fetch moves nothing (replica.Replica.Admit's Ready is
// then empty), and is not carried out: every leader of thousands of
// partitions admits each of them twice per replica.fetch.wait.max.ms.
//
// Nor is it stepped at all while the core is quiet there (admitQuiet,
// replica.QuietAdmits): such a fetch leaves only its time, without the
// partition lock.
func (p *partition) Admit(fp api.FetchPartition, replicaID int32, record bool, nowMs int64) error {
	if record && replicaID >= 0 && p.admitQuiet(fp, replicaID, nowMs) {
		return nil
	}
	p.mu.Lock()
	rd, err := p.core.Admit(fp, replicaID, record, nowMs, p.b.isEligibleReplica)
	if rd.Empty() {
		// The follower's position may have reached the log end, the
		// last one to: the partition is quiet from now on.
		p.publishQuiet()
		if invariant.Panics && p.core.LastStableOffset() != p.lastStable.Load() {
			invariant.Broken("%s: an empty admit left the last stable offset %d published as %d", p.name(), p.core.LastStableOffset(), p.lastStable.Load())
		}
		p.mu.Unlock()
		return err
	}
	answers := p.readyLocked(rd)
	p.mu.Unlock()
	for _, a := range answers {
		a.Done(a.Result)
	}
	return err
}

// Bounds is replica.Source.Bounds.
func (p *partition) Bounds() (hw, lso, logStart int64) {
	lso = p.lastStable.Load()
	return p.highWatermark.Load(), lso, p.log.LogStartOffset()
}

// Read is replica.Source.Read.
func (p *partition) Read(offset int64, maxBytes int, minOneBatch bool, mode replica.ReadMode) (api.FetchResult, error) {
	return p.read(offset, maxBytes, minOneBatch, mode, false)
}

// pooledReads is a partition whose reads go into pooled buffers, for a
// fetch whose answer gives them back (api.FetchParams.Recycle).
type pooledReads struct{ *partition }

func (p pooledReads) Read(offset int64, maxBytes int, minOneBatch bool, mode replica.ReadMode) (api.FetchResult, error) {
	return p.read(offset, maxBytes, minOneBatch, mode, true)
}

// discard gives back the pooled buffers of reads that are not answered
// (a long poll that goes on waiting reads again later).
func (w *fetchWaiter) discard(results []api.FetchResult) {
	if w.params.Recycle == nil {
		return
	}
	for _, r := range results {
		r.Buffer.Release()
	}
}

// Divergence is replica.Source.Divergence (KIP-595's DivergingEpoch).
func (p *partition) Divergence(fp api.FetchPartition) *api.EpochEnd {
	return replica.DivergenceOf(p.log, fp)
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
		snap := make([]partSnap, len(w.parts))
		results, enough := w.read(snap)
		w.mu.Lock()
		if w.finished {
			w.reading = false
			w.mu.Unlock()
			w.discard(results)
			return
		}
		if enough {
			w.finishLocked()
			w.mu.Unlock()
			w.answer(results)
			w.unhook()
			return
		}
		w.discard(results)
		w.keepLocked(results, snap)
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
	// With a re-read running, last is older than what it reads.
	last, snap := w.last, w.snap
	if w.reading {
		last = nil
	}
	w.mu.Unlock()
	if last != nil && w.unchanged(snap) {
		w.answer(last)
	} else {
		results, _ := w.read(nil)
		w.answer(results)
	}
	w.unhook()
}

// answer sends a parked fetch's answer. It leaves the purgatory gauge only
// now, after its last read: a reader of the gauge that sees no parked
// fetch knows that records appended afterwards reach no answer already
// counted out.
func (w *fetchWaiter) answer(results []api.FetchResult) {
	w.b.metrics.FetchUnparked(w.follower())
	w.countOut(results)
	w.handOver(results)
	w.done(results)
}

// handOver gives the answer's pooled buffers to the request, which gives
// them back once the answer is encoded.
func (w *fetchWaiter) handOver(results []api.FetchResult) {
	if w.params.Recycle == nil {
		return
	}
	for _, r := range results {
		if r.Buffer != nil {
			w.params.Recycle(r.Buffer)
		}
	}
}

// follower reports whether a broker replica sent this fetch.
func (w *fetchWaiter) follower() bool { return w.params.ReplicaID >= 0 }

// finishLocked marks the waiter answered: pokes find it finished from
// now on, and its caller unhooks it (unhook) once w.mu is released.
func (w *fetchWaiter) finishLocked() {
	w.finished = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// unhook unregisters a finished waiter from its partitions, after its
// answer is on its way. It takes the partition locks, so it runs with
// neither w.mu nor a partition lock held (a re-read's goroutine or the
// timer's, never a poke, which runs under a partition lock).
func (w *fetchWaiter) unhook() {
	for i, p := range w.parts {
		if p != nil {
			p.removeWatcher(w, i)
		}
	}
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
