package group

import "fmt"

// Config holds the broker properties the coordinator follows (Kafka names in
// the comments).
type Config struct {
	// InitialRebalanceDelayMs is group.initial.rebalance.delay.ms: how long
	// the first rebalance of an empty group waits for more members.
	InitialRebalanceDelayMs int64
	// MinSessionTimeoutMs and MaxSessionTimeoutMs are
	// group.min.session.timeout.ms and group.max.session.timeout.ms; a join
	// outside the range gets INVALID_SESSION_TIMEOUT.
	MinSessionTimeoutMs int64
	MaxSessionTimeoutMs int64
	// MaxSize is group.max.size: members plus members that were handed an
	// id (MEMBER_ID_REQUIRED) and have not rejoined yet. Counting the latter
	// bounds what a client looping on JoinGroup without an id can allocate.
	MaxSize int
	// OffsetsRetentionMs is offsets.retention.minutes in milliseconds.
	OffsetsRetentionMs int64
	// MaxOffsetMetadataBytes is offset.metadata.max.bytes; a longer commit
	// metadata string gets OFFSET_METADATA_TOO_LARGE.
	MaxOffsetMetadataBytes int
}

// DefaultConfig is Kafka's defaults, except group.max.size: Kafka allows
// 2^31-1 members, we cap a group at a size that still rebalances in
// reasonable time.
func DefaultConfig() Config {
	return Config{
		InitialRebalanceDelayMs: 3000,
		MinSessionTimeoutMs:     6000,
		MaxSessionTimeoutMs:     1800000,
		MaxSize:                 10000,
		OffsetsRetentionMs:      7 * 24 * 60 * 60 * 1000,
		MaxOffsetMetadataBytes:  4096,
	}
}

// newMemberJoinTimeoutMs bounds how long a member that joined for the first
// time may stay parked in a rebalance (Kafka's NewMemberJoinTimeoutMs): a
// client that disconnects during a long rebalance must not hold the group
// open until the rebalance timeout of the others.
const newMemberJoinTimeoutMs = 5 * 60 * 1000

func (c Config) validate() error {
	switch {
	case c.InitialRebalanceDelayMs < 0:
		return fmt.Errorf("group config: initial rebalance delay %d ms is negative", c.InitialRebalanceDelayMs)
	case c.MinSessionTimeoutMs <= 0 || c.MaxSessionTimeoutMs < c.MinSessionTimeoutMs:
		return fmt.Errorf("group config: session timeout range [%d, %d] ms is empty or not positive",
			c.MinSessionTimeoutMs, c.MaxSessionTimeoutMs)
	case c.MaxSize <= 0:
		return fmt.Errorf("group config: max size %d must be positive", c.MaxSize)
	case c.OffsetsRetentionMs <= 0:
		return fmt.Errorf("group config: offsets retention %d ms must be positive", c.OffsetsRetentionMs)
	case c.MaxOffsetMetadataBytes < 0:
		return fmt.Errorf("group config: max offset metadata %d bytes is negative", c.MaxOffsetMetadataBytes)
	}
	return nil
}
