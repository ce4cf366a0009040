package replication

import (
	"fmt"
	"slices"

	"github.com/skein-log/skein/internal/metadata"
)

// MaxReplicaLagTimeMs bounds replica.lag.time.max.ms (one day): a larger
// value would keep a dead follower in the ISR, stalling acks=all, for longer
// than anyone would accept, and keeps time arithmetic far from overflow.
const MaxReplicaLagTimeMs = 24 * 60 * 60 * 1000

// Config is the broker and topic configuration a Leader needs.
type Config struct {
	// LocalID is this broker's id.
	LocalID int32
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms: how long an ISR follower
	// may go without being caught up before the leader proposes removing it.
	ReplicaLagTimeMaxMs int64
	// MinInsyncReplicas is the topic's min.insync.replicas.
	MinInsyncReplicas int32
	// ISRResendBackoffMinMs and ISRResendBackoffMaxMs bound the resend
	// backoff of an ISR proposal whose outcome is unknown (OnISRAnswer);
	// 0 means ISRResendBackoffMinMs and ISRResendBackoffMaxMs. The
	// simulator scales them down with its other timings.
	ISRResendBackoffMinMs, ISRResendBackoffMaxMs int64
	// FreezeHighWatermarkUnderMinISR stops the HW from advancing while the
	// committed ISR is smaller than min.insync.replicas (KIP-966). Eligible
	// leader replicas (ELR) rely on it: a record below the HW is then on at
	// least min.insync.replicas replicas, so a replica moved from the ISR to
	// the ELR is known to hold every committed record. The cost is that
	// acks=1 records stay invisible to consumers while the ISR is too small.
	FreezeHighWatermarkUnderMinISR bool
}

func (c Config) validate() error {
	if c.LocalID < 0 {
		return fmt.Errorf("local broker id %d is negative", c.LocalID)
	}
	if c.ReplicaLagTimeMaxMs <= 0 || c.ReplicaLagTimeMaxMs > MaxReplicaLagTimeMs {
		return fmt.Errorf("replica.lag.time.max.ms %d is outside 1..%d", c.ReplicaLagTimeMaxMs, MaxReplicaLagTimeMs)
	}
	if c.MinInsyncReplicas < 1 {
		return fmt.Errorf("min.insync.replicas %d is below 1", c.MinInsyncReplicas)
	}
	return nil
}

// State is a partition's leadership state as committed in cluster metadata.
type State struct {
	// Replicas is the assignment, in preference order.
	Replicas []int32
	// ISR is the committed in-sync replica set.
	ISR []int32
	// Leader is the leading broker, or metadata.NoLeader.
	Leader int32
	// LeaderEpoch bumps on every leader change.
	LeaderEpoch int32
	// PartitionEpoch bumps on every change; AlterPartition carries it so the
	// controller can reject proposals computed from stale state.
	PartitionEpoch int32
}

// StateOf extracts the replication state of a metadata partition.
func StateOf(p metadata.Partition) State {
	return State{
		Replicas:       slices.Clone(p.Replicas),
		ISR:            slices.Clone(p.ISR),
		Leader:         p.Leader,
		LeaderEpoch:    p.LeaderEpoch,
		PartitionEpoch: p.PartitionEpoch,
	}
}

func (s State) clone() State {
	s.Replicas = slices.Clone(s.Replicas)
	s.ISR = slices.Clone(s.ISR)
	return s
}

// validate checks s as the state of a partition led by localID: metadata is
// decoded from the network and disk, so a broken state is refused rather
// than trusted.
func (s State) validate(localID int32) error {
	if len(s.Replicas) == 0 || len(s.Replicas) > metadata.MaxReplicas {
		return fmt.Errorf("%d replicas, want 1..%d", len(s.Replicas), metadata.MaxReplicas)
	}
	if s.LeaderEpoch < 0 || s.PartitionEpoch < 0 {
		return fmt.Errorf("negative epoch (leader epoch %d, partition epoch %d)", s.LeaderEpoch, s.PartitionEpoch)
	}
	for i, r := range s.Replicas {
		if slices.Contains(s.Replicas[:i], r) {
			return fmt.Errorf("replica %d listed twice in %v", r, s.Replicas)
		}
	}
	for i, r := range s.ISR {
		if slices.Contains(s.ISR[:i], r) {
			return fmt.Errorf("replica %d listed twice in isr %v", r, s.ISR)
		}
		if !slices.Contains(s.Replicas, r) {
			return fmt.Errorf("isr member %d is not a replica %v", r, s.Replicas)
		}
	}
	if s.Leader != localID {
		return fmt.Errorf("leader is %d, not this broker %d", s.Leader, localID)
	}
	// Kafka elects only from the ISR, and KIP-966/unclean elections make the
	// new leader the sole ISR member, so a leader outside its ISR is a bug.
	if !slices.Contains(s.ISR, localID) {
		return fmt.Errorf("leader %d is not in its isr %v", localID, s.ISR)
	}
	return nil
}

// LocalLog is the leader's own log when it takes over a partition.
type LocalLog struct {
	// LogEndOffset is the next offset to be written.
	LogEndOffset int64
	// DurableEnd is the end of what is fsynced (LogEndOffset when the topic
	// has write.caching=true).
	DurableEnd int64
	// HighWatermark is the HW this replica last knew (checkpointed or learnt
	// as a follower). A replica that served reads must never move it back.
	HighWatermark int64
	// EpochStartOffset is where the current leader epoch starts: the log end
	// offset when this broker became leader (Kafka's leaderEpochStartOffset).
	EpochStartOffset int64
}

func (l LocalLog) validate() error {
	if l.LogEndOffset < 0 {
		return fmt.Errorf("log end offset %d is negative", l.LogEndOffset)
	}
	if l.DurableEnd < 0 || l.DurableEnd > l.LogEndOffset {
		return fmt.Errorf("durable end %d is outside 0..%d (log end)", l.DurableEnd, l.LogEndOffset)
	}
	if l.HighWatermark < 0 || l.HighWatermark > l.LogEndOffset {
		return fmt.Errorf("high watermark %d is outside 0..%d (log end)", l.HighWatermark, l.LogEndOffset)
	}
	if l.EpochStartOffset < 0 || l.EpochStartOffset > l.LogEndOffset {
		return fmt.Errorf("leader epoch start offset %d is outside 0..%d (log end)", l.EpochStartOffset, l.LogEndOffset)
	}
	return nil
}
