package replication

import "slices"

// Snapshot is a copy of a Leader's state for metrics, logs and tests.
type Snapshot struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32 // committed
	MaximalISR     []int32 // committed plus pending additions: what bounds the HW
	Pending        *ISRChange

	LogEndOffset     int64
	DurableEnd       int64
	HighWatermark    int64
	EpochStartOffset int64

	Followers []FollowerSnapshot // in replica order
}

// FollowerSnapshot is what the leader knows of one follower.
type FollowerSnapshot struct {
	ID int32
	// Offset is the durable end from its last fetch, -1 before the first.
	Offset int64
	// Lag is how many offsets it is behind the leader's log end.
	Lag int64
	// LastFetchMs is -1 before the first fetch; LastCaughtUpMs is -1 when
	// it has not been caught up in this leader epoch.
	LastFetchMs    int64
	LastCaughtUpMs int64
	InISR          bool
}

// Snapshot returns a copy of the current state.
func (l *Leader) Snapshot() Snapshot {
	s := Snapshot{
		LeaderEpoch:      l.state.LeaderEpoch,
		PartitionEpoch:   l.state.PartitionEpoch,
		Replicas:         slices.Clone(l.state.Replicas),
		ISR:              slices.Clone(l.state.ISR),
		MaximalISR:       l.maximalISR(),
		LogEndOffset:     l.logEnd,
		DurableEnd:       l.durableEnd,
		HighWatermark:    l.hw,
		EpochStartOffset: l.epochStart,
	}
	if l.pend != nil {
		p := l.pend.clone()
		s.Pending = &p
	}
	for _, id := range l.state.Replicas {
		f := l.follower(id)
		if f == nil {
			continue
		}
		fs := FollowerSnapshot{
			ID:             id,
			Offset:         f.offset,
			Lag:            l.logEnd - max(f.offset, 0),
			LastFetchMs:    -1,
			LastCaughtUpMs: -1,
			InISR:          slices.Contains(l.state.ISR, id),
		}
		if f.lastFetchLogEnd != unknownOffset {
			fs.LastFetchMs = f.lastFetchMs
		}
		if f.lastCaughtUpMs != neverCaughtUp {
			fs.LastCaughtUpMs = f.lastCaughtUpMs
		}
		s.Followers = append(s.Followers, fs)
	}
	return s
}
