package replication

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// isrAnswer is what the controller's error answer to an ISR proposal says
// about the proposal's fate.
type isrAnswer int

const (
	// answerUnknown: the proposal may still be committed. No answer, a
	// controller that lost office after proposing the metadata entry
	// (NOT_CONTROLLER; its successor may commit the entry), a commit that
	// timed out, or a broker epoch the controller did not know (the broker
	// is re-registering). The proposal stays pending and is resent.
	answerUnknown isrAnswer = iota
	// answerStaleView: the controller refused it because this leader's
	// view is older than the committed state (or, NEW_LEADER_ELECTED,
	// applied it and moved leadership). Newer metadata is on its way and
	// settles the proposal; resending would be refused again.
	answerStaleView
	// answerRefused: the controller validated the proposal against the
	// current partition epoch and will not apply it (INELIGIBLE_REPLICA,
	// OPERATION_NOT_ATTEMPTED, an invalid request). A request of the same
	// proposal sent earlier cannot have been committed either: it would
	// have moved the partition epoch, and the answer would be stale-view.
	answerRefused
)

// classifyISRAnswer sorts an AlterPartition error as Kafka's
// AlterPartitionManager and Partition.handleAlterPartitionError do:
// only errors that say the change was not and will not be applied are
// refusals; anything unrecognised is treated as an unknown outcome,
// because dropping a proposal that the controller then commits lets the
// HW move past a follower that ends up in the ISR.
func classifyISRAnswer(err error) isrAnswer {
	switch {
	case errors.Is(err, kerr.InvalidUpdateVersion), errors.Is(err, kerr.FencedLeaderEpoch),
		errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.NewLeaderElected),
		errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return answerStaleView
	case errors.Is(err, kerr.IneligibleReplica), errors.Is(err, kerr.OperationNotAttempted),
		errors.Is(err, kerr.InvalidRequest):
		return answerRefused
	}
	return answerUnknown
}

// ISRChangeOutcomeUnknown reports whether err, the failure of an ISR
// proposal's request, leaves its fate open: the caller must resend the
// proposal (while it is still pending, see IsPending) rather than count
// on OnISRChangeRejected to release it.
func ISRChangeOutcomeUnknown(err error) bool {
	return classifyISRAnswer(err) == answerUnknown
}

// Resends of a proposal whose outcome is unknown wait a backoff that starts
// at ISRResendBackoffMinMs and doubles up to ISRResendBackoffMaxMs. There is
// no attempt limit: giving up would either drop the proposal (unsafe: the
// controller may commit it, and its additions must keep bounding the HW) or
// keep it pending with nobody resending (the partition could never change
// its ISR again). The loop ends when the outcome is known: an answer, or
// metadata that settles it (OnISRCommitted), or a new leader epoch.
const (
	ISRResendBackoffMinMs = 100
	ISRResendBackoffMaxMs = 2000
)

// OnISRAnswer handles the answer to one send of proposal ch: err is nil
// when the controller accepted it (the image brings the committed state),
// else its error answer or the request's failure. It returns after how
// many milliseconds the same proposal must be sent again (0: no resend),
// and whether the HW moved (a refusal that released proposed additions).
// The backoff doubles with every unknown outcome of the same proposal.
func (l *Leader) OnISRAnswer(ch ISRChange, err error) (resendAfterMs int64, hwAdvanced bool) {
	if err == nil || !l.IsPending(ch) {
		return 0, false
	}
	if !ISRChangeOutcomeUnknown(err) {
		return 0, l.OnISRChangeRejected(ch, err)
	}
	lo, hi := l.cfg.ISRResendBackoffMinMs, l.cfg.ISRResendBackoffMaxMs
	if lo <= 0 {
		lo = ISRResendBackoffMinMs
	}
	if hi <= 0 {
		hi = ISRResendBackoffMaxMs
	}
	if l.resendBackoffMs == 0 {
		l.resendBackoffMs = lo
	} else {
		l.resendBackoffMs = min(2*l.resendBackoffMs, max(hi, lo))
	}
	return l.resendBackoffMs, false
}

// OnControllerChange reports a new active controller: a proposal waiting
// out a resend backoff should go to it now (the backoff spaced sends to a
// controller that did not answer; a new one may), and the backoff starts
// again. It returns the pending proposal, if any.
func (l *Leader) OnControllerChange() (ISRChange, bool) {
	l.resendBackoffMs = 0
	return l.Pending()
}
