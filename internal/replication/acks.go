package replication

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The errors an acks=all produce can get from the replication state. They
// are Kafka's codes, so the node can answer with them directly.
var (
	// ErrNotEnoughReplicas: the ISR is smaller than min.insync.replicas, so
	// the batch was not appended.
	ErrNotEnoughReplicas = kerr.NotEnoughReplicas
	// ErrNotEnoughReplicasAfterAppend: the batch is appended and committed,
	// but the ISR had shrunk below min.insync.replicas when the produce
	// completed, so the producer may retry (and get a duplicate unless it is
	// idempotent).
	ErrNotEnoughReplicasAfterAppend = kerr.NotEnoughReplicasAfterAppend
)

// CheckAcksAll is called before appending an acks=all batch: it refuses with
// NOT_ENOUGH_REPLICAS when the committed ISR is smaller than
// min.insync.replicas (capped at the replication factor), as Kafka's
// Partition.appendRecordsToLeader does. acks=0 and acks=1 skip the check.
func (l *Leader) CheckAcksAll() error {
	if n, want := len(l.state.ISR), l.effectiveMinISR(); n < want {
		return fmt.Errorf("isr %v has %d members, min.insync.replicas is %d: %w", l.state.ISR, n, want, ErrNotEnoughReplicas)
	}
	return nil
}

// AckReady says whether an acks=all produce whose last record is at
// targetOffset-1 may complete: done once the HW reached targetOffset. As in
// Kafka's checkEnoughReplicasReachOffset, the ISR is checked again at that
// moment: if the maximal ISR has fallen below min.insync.replicas the
// produce completes with NOT_ENOUGH_REPLICAS_AFTER_APPEND. The node calls it
// for its waiting produces whenever the HW moves or the ISR changes.
func (l *Leader) AckReady(targetOffset int64) (done bool, err error) {
	if l.hw < targetOffset {
		return false, nil
	}
	if n, want := len(l.maximalISR()), l.effectiveMinISR(); n < want {
		return true, fmt.Errorf("offset %d committed by isr %v, %d members, min.insync.replicas is %d: %w",
			targetOffset, l.maximalISR(), n, want, ErrNotEnoughReplicasAfterAppend)
	}
	return true, nil
}
