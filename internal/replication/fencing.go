package replication

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CheckLeaderEpoch validates the current_leader_epoch a Fetch, ListOffsets
// or OffsetForLeaderEpoch request carries against this replica's leader
// epoch (KIP-320): -1 means the client did not say and is accepted; an older
// epoch gets FENCED_LEADER_EPOCH (the client is behind and must refresh its
// metadata); a newer one gets UNKNOWN_LEADER_EPOCH (this broker is behind and
// the client should retry). It keeps a zombie follower or consumer from
// acting on a previous leader's log.
func CheckLeaderEpoch(requested, current int32) error {
	switch {
	case requested == UndefinedEpoch || requested == current:
		return nil
	case requested < current:
		return fmt.Errorf("request leader epoch %d is older than %d: %w", requested, current, kerr.FencedLeaderEpoch)
	default:
		return fmt.Errorf("request leader epoch %d is newer than %d: %w", requested, current, kerr.UnknownLeaderEpoch)
	}
}
