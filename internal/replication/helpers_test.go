package replication

import (
	"fmt"
	"slices"
)

// checkSnapshot checks what must hold in every state: the HW is below the
// leader's durable end, the leader is in its committed ISR, in any pending
// change and in the last proposal, and the committed ISR is part of the
// maximal ISR.
func checkSnapshot(snap Snapshot, localID int32, proposal *ISRChange) error {
	if snap.HighWatermark > snap.DurableEnd || snap.DurableEnd > snap.LogEndOffset {
		return fmt.Errorf("want hw %d <= durable end %d <= log end %d", snap.HighWatermark, snap.DurableEnd, snap.LogEndOffset)
	}
	if !slices.Contains(snap.ISR, localID) {
		return fmt.Errorf("leader %d not in isr %v", localID, snap.ISR)
	}
	if snap.Pending != nil && !slices.Contains(snap.Pending.NewISR, localID) {
		return fmt.Errorf("leader %d not in pending isr %v", localID, snap.Pending.NewISR)
	}
	if proposal != nil && !slices.Contains(proposal.NewISR, localID) {
		return fmt.Errorf("leader %d not in proposed isr %v", localID, proposal.NewISR)
	}
	for _, id := range snap.ISR {
		if !slices.Contains(snap.MaximalISR, id) {
			return fmt.Errorf("isr member %d missing from maximal isr %v", id, snap.MaximalISR)
		}
	}
	return nil
}
