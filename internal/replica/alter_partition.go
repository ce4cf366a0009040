package replica

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replication"
)

// AlterPartitionRequest is the AlterPartition request (v2, topic ids) that
// proposes change for one partition on behalf of broker brokerID in its
// registration brokerEpoch.
func AlterPartitionRequest(brokerID int32, brokerEpoch int64, topic metadata.TopicID, partition int32, change replication.ISRChange) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 2
	req.BrokerID = brokerID
	req.BrokerEpoch = brokerEpoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = partition
	rp.LeaderEpoch = change.LeaderEpoch
	rp.PartitionEpoch = change.PartitionEpoch
	rp.NewISR = change.NewISR
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// AlterPartitionOutcome is the controller's answer to one
// AlterPartitionRequest: nil when it accepted the change, else its error
// (for OnISRAnswer to classify). An answer that is not about this one
// partition leaves its fate unknown.
func AlterPartitionOutcome(resp *kmsg.AlterPartitionResponse) error {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("alter partition: answer has %d topics, want 1 with 1 partition", len(resp.Topics))
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}
