package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestISRChangeOutcome: only answers that say the controller checked the
// proposal against the current state and will not apply it release a
// pending proposal; anything that leaves its fate open is resent.
func TestISRChangeOutcome(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want isrAnswer
	}{
		{kerr.IneligibleReplica, answerRefused},
		{kerr.OperationNotAttempted, answerRefused},
		{kerr.InvalidRequest, answerRefused},
		{kerr.InvalidUpdateVersion, answerStaleView},
		{kerr.FencedLeaderEpoch, answerStaleView},
		{kerr.NotLeaderForPartition, answerStaleView},
		{kerr.NewLeaderElected, answerStaleView},
		{kerr.UnknownTopicOrPartition, answerStaleView},
		{kerr.UnknownTopicID, answerStaleView},
		{kerr.NotController, answerUnknown},
		{fmt.Errorf("%w: raft leadership lost", kerr.NotController), answerUnknown},
		{kerr.StaleBrokerEpoch, answerUnknown},
		{kerr.RequestTimedOut, answerUnknown},
		{kerr.UnknownServerError, answerUnknown},
		{context.DeadlineExceeded, answerUnknown},
		{io.ErrUnexpectedEOF, answerUnknown},
		{errors.New("dial tcp: connection refused"), answerUnknown},
		{fmt.Errorf("controller rpc: %w", kerr.IneligibleReplica), answerRefused},
	} {
		if got := classifyISRAnswer(tc.err); got != tc.want {
			t.Errorf("%v: got %d, want %d", tc.err, got, tc.want)
		}
		if got, want := ISRChangeOutcomeUnknown(tc.err), tc.want == answerUnknown; got != want {
			t.Errorf("ISRChangeOutcomeUnknown(%v) = %v, want %v", tc.err, got, want)
		}
	}
}
