package replication

import "fmt"

// UndefinedEpoch and UndefinedOffset are Kafka's "unknown" values in
// OffsetForLeaderEpoch answers (-1, -1).
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// EpochEndOffset is an OffsetForLeaderEpoch answer: Epoch is the largest
// epoch at or below the requested one that the answering log knows, and
// EndOffset is where it ends (the start of the next epoch, or the log end
// for the latest).
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// FollowerLog is what TruncationPoint needs from the follower's own log.
type FollowerLog struct {
	LogEndOffset int64
	// HighWatermark is used only when the leader knows no epoch at all (see
	// TruncationPoint).
	HighWatermark int64
	// EndOffsetFor answers OffsetForLeaderEpoch against the follower's own
	// leader-epoch cache (storage.EpochCache.EndOffsetFor with its log end).
	EndOffsetFor func(epoch int32) (knownEpoch int32, endOffset int64)
}

// Truncation is where a follower must cut its log before fetching.
type Truncation struct {
	// Offset is the new log end: records at and above it are removed.
	Offset int64
	// Complete is false when the follower must truncate to Offset and then
	// ask the leader again, for its new latest epoch (KIP-279).
	Complete bool
}

// TruncationPoint is the follower's side of log reconciliation after a
// leader change (KIP-101, KIP-279). The follower sent OffsetForLeaderEpoch
// for requestedEpoch, the latest epoch in its cache, and the leader answered
// leader. The follower keeps exactly the prefix both logs share:
//
//   - the leader knows the epoch (answer epoch == requested): the follower's
//     records of that epoch are valid up to the leader's end of it, so cut
//     at min(leader end, own log end);
//   - the leader answers an older epoch E' (it never wrote the requested
//     one; KIP-279): where the follower also has E', the logs agree up to
//     the earlier of the two ends of E', so cut at min(own end of E', leader
//     end, log end), done;
//   - the follower does not have E' either (its latest epoch at or below E'
//     is older still): cut at its own end of that older epoch and ask again;
//     each round asks for a strictly older epoch, so it ends;
//   - the follower has no epoch at or below E': its data predates every
//     epoch it tracks, so the leader's end offset is the bound;
//   - the leader answers with no end offset (it knows no epoch at all):
//     Kafka falls back to the follower's high watermark. This is the only
//     place the HW is used: KIP-101 replaced HW truncation because a
//     follower's HW may lag the committed log (scenario 1) and can point
//     into divergent history (scenario 2).
//
// The result may lie below the follower's high watermark only after an
// unclean election; the node then lowers its HW with the log.
func TruncationPoint(local FollowerLog, requestedEpoch int32, leader EpochEndOffset) (Truncation, error) {
	if local.LogEndOffset < 0 {
		return Truncation{}, fmt.Errorf("truncation point: follower log end %d is negative", local.LogEndOffset)
	}
	if local.EndOffsetFor == nil {
		return Truncation{}, fmt.Errorf("truncation point: no epoch lookup for the follower's log")
	}
	if leader.Epoch > requestedEpoch {
		return Truncation{}, fmt.Errorf("truncation point: leader answered epoch %d for requested epoch %d", leader.Epoch, requestedEpoch)
	}
	if leader.EndOffset < UndefinedOffset {
		return Truncation{}, fmt.Errorf("truncation point: leader end offset %d is negative", leader.EndOffset)
	}
	logEnd := local.LogEndOffset
	if leader.EndOffset == UndefinedOffset {
		return Truncation{Offset: min(max(local.HighWatermark, 0), logEnd), Complete: true}, nil
	}
	if leader.Epoch == UndefinedEpoch {
		// An end offset without an epoch: OffsetForLeaderEpoch v0, before
		// KIP-279. Trust the offset.
		return Truncation{Offset: min(leader.EndOffset, logEnd), Complete: true}, nil
	}
	localEpoch, localEnd := local.EndOffsetFor(leader.Epoch)
	switch {
	case localEpoch == UndefinedEpoch || localEnd == UndefinedOffset:
		return Truncation{Offset: min(leader.EndOffset, logEnd), Complete: true}, nil
	case localEpoch > leader.Epoch || localEnd < 0:
		return Truncation{}, fmt.Errorf("truncation point: follower epoch lookup for %d answered epoch %d end %d", leader.Epoch, localEpoch, localEnd)
	case localEpoch < leader.Epoch:
		return Truncation{Offset: min(localEnd, logEnd), Complete: false}, nil
	default:
		return Truncation{Offset: min(localEnd, leader.EndOffset, logEnd), Complete: true}, nil
	}
}
