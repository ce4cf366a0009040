package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/skein-log/skein/internal/batch"
)

// Observers follow the quorum without being part of it, as KRaft's
// broker-only nodes follow __cluster_metadata: they fetch committed entries
// from a voter and apply them to the same state machine, in the same order.
// An observer sends no Raft message, so it can neither vote nor acknowledge
// an entry: it cannot change what the quorum decides. It only ever receives
// entries a voter has applied, which Raft guarantees are committed and
// final; so it may fetch from any voter, and a lagging voter only delays it.
//
// The voter side is ReadCommitted (entries) and Node.LatestSnapshot (when
// the observer is behind the log's start); the observer side is Observer.
// Entries travel as the metadata log's record batches (EncodeEntryBatches).

// ObserverRead is a slice of the committed log for an observer.
type ObserverRead struct {
	// Entries start at the requested index and are all committed; empty
	// when there is nothing new or the log no longer holds that index.
	Entries []*raftpb.Entry
	// Committed is the last index the voter has applied (all committed).
	Committed uint64
	// Snapshot is the voter's latest snapshot (zero if none).
	Snapshot SnapshotInfo
	// Compacted: the requested index is behind the log's start; the
	// observer must load Snapshot first.
	Compacted bool
}

// readCommitted reads entries [from, committed] from Raft's storage, at
// most maxBytes of them (at least one entry). It touches only the
// MemoryStorage, which locks itself, so a Node calls it from any goroutine
// while its loop runs.
func (c *Core) readCommitted(from, committed, maxBytes uint64) (ObserverRead, error) {
	out := ObserverRead{Committed: committed}
	snap, err := c.ms.Snapshot()
	if err != nil {
		return out, fmt.Errorf("quorum: read snapshot: %w", err)
	}
	out.Snapshot = SnapshotInfo{Index: snap.GetMetadata().GetIndex(), Term: snap.GetMetadata().GetTerm()}
	if from == 0 {
		return out, errors.New("quorum: entries start at index 1")
	}
	first, err := c.ms.FirstIndex()
	if err != nil {
		return out, fmt.Errorf("quorum: first index: %w", err)
	}
	if from < first {
		out.Compacted = true
		return out, nil
	}
	if from > committed {
		return out, nil
	}
	ents, err := c.ms.Entries(from, committed+1, maxBytes)
	if errors.Is(err, raft.ErrCompacted) {
		out.Compacted = true
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("quorum: read entries from %d: %w", from, err)
	}
	out.Entries = ents
	return out, nil
}

// EncodeEntryBatches appends entries as the metadata log stores them: one
// record batch per entry, at offset index-1.
func EncodeEntryBatches(dst []byte, entries []*raftpb.Entry) ([]byte, error) {
	for _, e := range entries {
		b, err := encodeEntryBatch(e)
		if err != nil {
			return dst, err
		}
		batch.SetBaseOffset(b, int64(e.GetIndex())-1)
		dst = append(dst, b...)
	}
	return dst, nil
}

// DecodeEntryBatches reverses EncodeEntryBatches, checking every batch's
// CRC and that each entry sits at the offset its index implies.
func DecodeEntryBatches(b []byte) ([]*raftpb.Entry, error) {
	var out []*raftpb.Entry
	err := batch.Split(b, func(one []byte) error {
		e, err := decodeEntryBatch(one)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decode metadata log batches: %w", err)
	}
	return out, nil
}

// ErrObserverGap means fetched entries do not continue what the observer
// applied; it refetches from Next.
var ErrObserverGap = errors.New("quorum: entries do not follow the observer's applied index")

// Observer applies a quorum's committed entries on a node that is not a
// voter. It holds no log of its own: after a restart it starts empty and
// is brought up to date from a voter's snapshot and entries, exactly as a
// voter rebuilds its state from its own. Not safe for concurrent use.
type Observer struct {
	apply   func(index uint64, data []byte)
	restore func(s SnapshotInfo, data []byte) error
	logger  *slog.Logger
	applied uint64
	// membership is a dynamic quorum's, as the entries and snapshots
	// applied so far record it (nil: none seen, or a static quorum).
	membership *Membership
}

// Membership is the dynamic quorum's membership as of Applied, and false
// if nothing applied recorded one (a static quorum).
func (o *Observer) Membership() (Membership, bool) {
	if o.membership == nil {
		return Membership{}, false
	}
	return *o.membership, true
}

// NewObserver makes an observer that hands entry data to apply (as
// NodeConfig.Apply) and snapshots to restore (the state machine replaced
// by the one at s.Index).
func NewObserver(apply func(index uint64, data []byte), restore func(s SnapshotInfo, data []byte) error, logger *slog.Logger) *Observer {
	if logger == nil {
		logger = slog.Default()
	}
	return &Observer{apply: apply, restore: restore, logger: logger}
}

// Applied is the last index applied (0: nothing yet).
func (o *Observer) Applied() uint64 { return o.applied }

// Next is the index to fetch from.
func (o *Observer) Next() uint64 { return o.applied + 1 }

// ApplyEntries applies fetched entries. committed is the voter's committed
// index: an entry past it was never handed out by a voter, so its presence
// means a broken peer, and nothing of the batch is applied. Entries at or
// below Applied (a repeated answer) are skipped.
func (o *Observer) ApplyEntries(entries []*raftpb.Entry, committed uint64) error {
	for _, e := range entries {
		if e.GetIndex() > committed {
			return fmt.Errorf("quorum: entry %d is past the committed index %d", e.GetIndex(), committed)
		}
	}
	for _, e := range entries {
		switch {
		case e.GetIndex() <= o.applied:
			continue
		case e.GetIndex() != o.applied+1:
			return fmt.Errorf("%w: got %d, applied %d", ErrObserverGap, e.GetIndex(), o.applied)
		}
		o.applied = e.GetIndex()
		if e.GetType() == raftpb.EntryConfChangeV2 {
			o.followChange(e)
			continue
		}
		if e.GetType() != raftpb.EntryNormal || len(e.GetData()) == 0 {
			continue // a leader's empty entry (voters skip these alike)
		}
		_, data, ok := decodeProposal(e.GetData())
		if !ok {
			o.logger.Error("skipping committed entry with an unknown envelope", "index", e.GetIndex(), "bytes", len(e.GetData()))
			continue
		}
		o.apply(e.GetIndex(), data)
	}
	return nil
}

// Restore replaces the state with a voter's snapshot, when the entries
// the observer needs next were compacted away.
func (o *Observer) Restore(s SnapshotInfo, data []byte) error {
	if s.Index < o.applied {
		return fmt.Errorf("quorum: snapshot at index %d is behind the applied index %d", s.Index, o.applied)
	}
	ms, data, err := UnwrapSnapshot(data)
	if err != nil {
		return fmt.Errorf("quorum: snapshot at index %d: %w", s.Index, err)
	}
	if err := o.restore(s, data); err != nil {
		return fmt.Errorf("quorum: restore snapshot at index %d: %w", s.Index, err)
	}
	o.applied, o.membership = s.Index, ms
	o.logger.Info("observer loaded snapshot", "index", s.Index, "term", s.Term, "bytes", len(data))
	return nil
}

// followChange applies a committed configuration change to the observed
// membership. One that does not decode is skipped (and logged): voters
// refuse to start on it, and the observer only follows.
func (o *Observer) followChange(e *raftpb.Entry) {
	if voters, _, ok, err := decodeUpgrade(e); err != nil || ok {
		if err != nil {
			o.logger.Error("skipping undecodable kraft.version upgrade", "index", e.GetIndex(), "err", err)
			return
		}
		// A static quorum's upgrade: from here the voters are the log's.
		o.membership = &Membership{Dynamic: true, Voters: slices.Clone(voters)}
		slices.SortFunc(o.membership.Voters, func(a, b Member) int { return int(a.NodeID) - int(b.NodeID) })
		return
	}
	cc, rec, err := confChangeMember(e)
	if err != nil {
		o.logger.Error("skipping undecodable configuration change", "index", e.GetIndex(), "err", err)
		return
	}
	if o.membership == nil {
		o.membership = &Membership{Dynamic: true}
	}
	o.membership.applyChange(cc, rec)
}
