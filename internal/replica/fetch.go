package replica

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/storage"
)

// Source is one partition as a fetch reads it: a wrapper's partition, whose
// lock (if any) each call takes.
type Source interface {
	// Admit checks that this broker may serve the partition to the
	// caller (it leads it; KIP-320's epoch check) and, when record is
	// set and replicaID names a follower, records the follower's
	// position: the offset it fetches from is what it holds durably.
	// nowMs is the fetch's time, read once for all its partitions.
	Admit(fp api.FetchPartition, replicaID int32, record bool, nowMs int64) error
	// Bounds are the high watermark, last stable offset and log start to
	// report.
	Bounds() (hw, lso, logStart int64)
	// Read reads whole batches from offset within maxBytes (ReadLog).
	Read(offset int64, maxBytes int, minOneBatch bool, mode ReadMode) (api.FetchResult, error)
	// Divergence is DivergenceOf the partition's log.
	Divergence(fp api.FetchPartition) *api.EpochEnd
}

// ReadFetch is the fetch read plan, one for the broker and the simulator:
// every partition of the request in order, within the request's and each
// partition's byte budgets. lookup resolves a request partition (an error
// is answered as is). record is set on a request's first read only: a
// follower's position is what it asked for, recorded once per request, at
// nowMs.
//
// A follower's position is recorded before the byte budget is looked at,
// for every partition it names: the offset it fetches from is what it
// holds, whatever this answer has room for (Kafka updates the follower
// fetch state of every partition in the request). Recording it only for
// partitions the budget reached held the high watermark of the others back
// until a later fetch.
//
// The first partition with data returns at least one whole batch even when
// it exceeds the limits, so a consumer never stalls on one large batch.
// enough is true when the answer should go now: min_bytes reached, or an
// error or a divergence to report.
//
// throttle, when not nil, caps the partitions it throttles (Kafka's
// replication quota, KIP-73): one whose allowance is spent is answered
// with its bounds and no records, as Kafka's leader answers a throttled
// replica, and the others of the same fetch are read as usual.
func ReadFetch(params api.FetchParams, lookup func(i int) (Source, error), record bool, nowMs int64, throttle Throttle) (results []api.FetchResult, enough bool) {
	results = make([]api.FetchResult, len(params.Partitions))
	budget := int(params.MaxBytes)
	total := 0
	gotData := false
	fromReplica := params.ReplicaID >= 0
	mode := ReadHighWatermark
	switch {
	case fromReplica:
		mode = ReadReplica
	case params.IsolationLevel == api.ReadCommitted:
		mode = ReadCommitted
	}
	for i, fp := range params.Partitions {
		src, err := lookup(i)
		if err == nil {
			err = src.Admit(fp, params.ReplicaID, record, nowMs)
		}
		if err != nil {
			results[i] = api.FetchResult{Err: err, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			enough = true
			continue
		}
		hw, lso, logStart := src.Bounds()
		limit := min(int(fp.MaxBytes), budget)
		if limit <= 0 && gotData {
			results[i] = api.FetchResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: logStart}
			continue
		}
		if fromReplica {
			if d := src.Divergence(fp); d != nil {
				// Answer with where the fetcher's epoch really ends; it
				// truncates there before fetching again.
				results[i] = api.FetchResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: logStart, Diverging: d}
				enough = true
				continue
			}
		}
		throttled := false
		if throttle != nil {
			allowed, ok := throttle.Allowance(i)
			if ok && allowed <= 0 {
				results[i] = api.FetchResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: logStart}
				continue
			}
			if ok {
				throttled, limit = true, min(limit, allowed)
			}
		}
		res, err := src.Read(fp.Offset, max(limit, 0), !gotData, mode)
		res.Err = err
		if err != nil {
			enough = true
		}
		if n := len(res.Records); n > 0 {
			gotData = true
			total += n
			budget -= n
			if throttled {
				throttle.Took(i, n)
			}
		}
		results[i] = res
	}
	if total >= int(max(params.MinBytes, 1)) {
		enough = true
	}
	return results, enough
}

// Throttle is the replication throttle of one fetch read, by request
// partition index.
type Throttle interface {
	// Allowance reports whether partition i is throttled (ok) and how
	// many bytes it may return now; 0 holds it back.
	Allowance(i int) (bytes int, ok bool)
	// Took counts the n bytes a throttled partition i returned.
	Took(i int, n int)
}

// ReadMode is how far a fetch may read.
type ReadMode int

const (
	// ReadHighWatermark: a read_uncommitted consumer, below the high
	// watermark.
	ReadHighWatermark ReadMode = iota
	// ReadCommitted: a read_committed consumer, below the last stable
	// offset, told the aborted transactions its records overlap.
	ReadCommitted
	// ReadReplica: a follower, below the log end.
	ReadReplica
)

// ReadLog serves a fetch from log: whole batches from offset, below the
// high watermark hw for read_uncommitted consumers, below the last stable
// offset lso for read_committed ones (with the aborted transactions whose
// records the answer may hold), below the log end for followers. With
// pooled the records are read into a buffer from internal/bufpool, or
// share the buffer of a read of the same bytes still held
// (storage.Log.ReadShared): the caller owns the hold in res.Buffer.
func ReadLog(log *storage.Log, hw, lso, offset int64, maxBytes int, minOneBatch bool, mode ReadMode, pooled bool) (api.FetchResult, error) {
	res := api.FetchResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: log.LogStartOffset()}
	leo := log.LogEndOffset()
	if offset < res.LogStartOffset || offset > leo {
		return res, kerr.OffsetOutOfRange
	}
	upTo := hw
	switch mode {
	case ReadReplica:
		upTo = leo
	case ReadCommitted:
		upTo = lso
		// Never null for read_committed: clients take null as "none
		// reported" only from read_uncommitted answers.
		res.AbortedTxns = []api.AbortedTxn{}
	}
	if offset >= upTo {
		return res, nil
	}
	var data []byte
	var err error
	if pooled {
		data, res.Buffer, err = log.ReadShared(offset, maxBytes, upTo, minOneBatch)
	} else {
		data, err = log.Read(offset, maxBytes, upTo, minOneBatch)
	}
	if err != nil {
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			return res, kerr.OffsetOutOfRange
		}
		return res, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	res.Records = data
	if mode == ReadCommitted && len(data) > 0 {
		end, err := endOfBatches(data)
		if err != nil {
			return res, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
		}
		for _, a := range log.AbortedTxns(offset, end) {
			res.AbortedTxns = append(res.AbortedTxns, api.AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
		}
	}
	return res, nil
}

// endOfBatches is the offset after the last batch of data.
func endOfBatches(data []byte) (int64, error) {
	var end int64
	err := batch.Split(data, func(b []byte) error {
		h, err := batch.ParseHeader(b)
		end = h.LastOffset() + 1
		return err
	})
	return end, err
}

// DivergenceOf checks a follower's fetch against the leader's epoch
// history: if the epoch of the last batch the follower holds ends, in the
// leader's log, before the follower's fetch offset, the follower has a tail
// the leader does not (KIP-595's DivergingEpoch, the in-fetch form of
// KIP-101's truncation).
func DivergenceOf(log *storage.Log, fp api.FetchPartition) *api.EpochEnd {
	if fp.LastFetchedEpoch < 0 {
		return nil
	}
	// The usual case, a follower of the latest epoch within the log: the
	// latest epoch ends at the log end (EpochCache.EndOffsetFor), read
	// beside the bounds without the cache's lock. Every idle follower
	// fetch asks it of every partition.
	leo := log.LogEndOffset()
	if latest, ok := log.LatestEpoch(); ok && latest == fp.LastFetchedEpoch && leo >= fp.Offset {
		return nil
	}
	epoch, end := log.Epochs().EndOffsetFor(fp.LastFetchedEpoch, leo)
	if epoch == fp.LastFetchedEpoch && end >= fp.Offset {
		return nil
	}
	if epoch < 0 {
		// The leader knows no such epoch: the answer still has to say
		// "diverging", so it names the log start; the follower then asks
		// with OffsetForLeaderEpoch, whose rule handles this case.
		return &api.EpochEnd{Epoch: -1, EndOffset: log.LogStartOffset()}
	}
	return &api.EpochEnd{Epoch: epoch, EndOffset: end}
}

// Read serves a fetch from this replica (ReadLog below its high
// watermark); an offline replica refuses.
func (r *Replica) Read(offset int64, maxBytes int, minOneBatch bool, mode ReadMode) (api.FetchResult, error) {
	lso := r.LastStableOffset()
	if r.offline {
		return api.FetchResult{HighWatermark: r.hw, LastStableOffset: lso, LogStartOffset: r.log.LogStartOffset()},
			fmt.Errorf("%w: %s: log directory offline", kerr.KafkaStorageError, r.name)
	}
	return ReadLog(r.log, r.hw, lso, offset, maxBytes, minOneBatch, mode, false)
}

// Quiet is what a wrapper publishes so that an idle follower's fetch can
// be admitted without the core (QuietAdmits): while OK, a follower fetch
// at LogEnd in leader epoch Epoch (or naming none) from one of Followers
// changes nothing but that follower's fetch time
// (replication.Leader.Quiet), and Tick proposes nothing.
type Quiet struct {
	OK        bool
	LogEnd    int64
	Epoch     int32
	Followers []int32 // the replicas but this broker, in replica order (Replica.Followers)
}

// Quiet is the replica's Quiet now, without Followers (Replica.Followers
// gives them; they change only with the replica set). A wrapper publishes
// it after every step.
func (r *Replica) Quiet() Quiet {
	if r.leader == nil || r.closed || r.offline || r.failed != nil {
		return Quiet{LogEnd: -1}
	}
	end, ok := r.leader.Quiet()
	// The replicas Admit checks a follower against (the image's) are
	// those the leader tracks, unless it ignored an older state.
	if !ok || !slices.Equal(r.state.Replicas, r.leader.Replicas()) {
		return Quiet{LogEnd: -1}
	}
	return Quiet{OK: true, LogEnd: end, Epoch: r.leaderEpoch}
}

// TickIdle reports whether Tick would decide nothing now, whatever the
// time: this replica does not lead (or is closed), or it is quiet (Quiet).
// A wrapper ticking thousands of partitions, most of which it follows,
// publishes it after every step and skips those.
func (r *Replica) TickIdle() bool {
	return r.leader == nil || r.closed || r.Quiet().OK
}

// Followers returns the replicas but this broker, in replica order (a
// Quiet's Followers): have itself, and same, if have holds just those;
// a new slice otherwise. A wrapper keeps its quiet fetch times by them and
// allocates only when the replica set changes.
func (r *Replica) Followers(have []int32) (followers []int32, same bool) {
	n := 0
	for _, id := range r.state.Replicas {
		if id == r.opts.LocalID {
			continue
		}
		if n >= len(have) || have[n] != id {
			n = -1
			break
		}
		n++
	}
	if n == len(have) {
		return have, true
	}
	out := make([]int32, 0, len(r.state.Replicas))
	for _, id := range r.state.Replicas {
		if id != r.opts.LocalID {
			out = append(out, id)
		}
	}
	return out, false
}

// QuietAdmits reports whether q lets follower replicaID's fetch of fp be
// admitted as quiet: its position is the log end the leader already
// recorded for it, and its leader epoch (KIP-320) is the current one or
// none. It returns the follower's index in q.Followers. The wrapper then
// keeps the fetch's time as the follower's latest quiet fetch
// (Options.QuietFetchMs) instead of calling Admit: the fetch reads on as
// usual.
func QuietAdmits(q Quiet, fp api.FetchPartition, replicaID int32) (follower int, ok bool) {
	if !q.OK || fp.Offset != q.LogEnd || fp.CurrentLeaderEpoch >= 0 && fp.CurrentLeaderEpoch != q.Epoch {
		return -1, false
	}
	for i, id := range q.Followers {
		if id == replicaID {
			return i, true
		}
	}
	return -1, false
}

// Admit is Source.Admit for a wrapper without a lock of its own. Its
// Ready is empty (Ready.Empty) unless the high watermark moved or an ISR
// change is proposed.
func (r *Replica) Admit(fp api.FetchPartition, replicaID int32, record bool, nowMs int64, eligible func(int32) bool) (Ready, error) {
	if r.leader == nil {
		return Ready{}, kerr.NotLeaderForPartition
	}
	if err := r.CheckLeaderEpoch(fp.CurrentLeaderEpoch); err != nil {
		return Ready{}, err
	}
	if replicaID >= 0 && record {
		return r.OnFollowerFetch(replicaID, fp.Offset, nowMs, eligible)
	}
	return Ready{}, nil
}
