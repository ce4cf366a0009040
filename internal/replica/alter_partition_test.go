package replica

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replication"
)

// TestAlterPartitionOutcome: the answer's errors reach the classifier; an
// answer about no partition (or several) leaves the outcome unknown, so the
// proposal is resent rather than taken as accepted.
func TestAlterPartitionOutcome(t *testing.T) {
	req := AlterPartitionRequest(3, 77, metadata.TopicID{9}, 2, replication.ISRChange{NewISR: []int32{3, 1}, LeaderEpoch: 4, PartitionEpoch: 8})
	if req.BrokerID != 3 || req.BrokerEpoch != 77 || len(req.Topics) != 1 || req.Topics[0].Partitions[0].PartitionEpoch != 8 {
		t.Fatalf("request %+v", req)
	}
	answer := func(top, part int16, partitions int) *kmsg.AlterPartitionResponse {
		resp := kmsg.NewPtrAlterPartitionResponse()
		resp.ErrorCode = top
		rt := kmsg.NewAlterPartitionResponseTopic()
		for range partitions {
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.ErrorCode = part
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		return resp
	}
	if err := AlterPartitionOutcome(answer(0, 0, 1)); err != nil {
		t.Errorf("accepted: %v", err)
	}
	if err := AlterPartitionOutcome(answer(kerr.NotController.Code, 0, 1)); !errors.Is(err, kerr.NotController) {
		t.Errorf("top-level error: %v", err)
	}
	if err := AlterPartitionOutcome(answer(0, kerr.IneligibleReplica.Code, 1)); !errors.Is(err, kerr.IneligibleReplica) {
		t.Errorf("partition error: %v", err)
	}
	if err := AlterPartitionOutcome(answer(0, 0, 0)); err == nil || !replication.ISRChangeOutcomeUnknown(err) {
		t.Errorf("answer about no partition: %v, want an unknown outcome", err)
	}
}
