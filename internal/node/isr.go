package node

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/replication"
)

// controlledShutdownTimeout bounds how long a stopping broker waits for
// the controller to move its leaderships away.
const controlledShutdownTimeout = 30 * time.Second

// proposeISRChange sends an ISR change the partition's replication state
// proposed to the active controller (Kafka's AlterPartition). The
// controller validates it against the partition epoch, so a proposal
// computed from stale state is refused rather than applied; the committed
// state reaches the partition through the metadata image.
func (b *Broker) proposeISRChange(p *partition, change replication.ISRChange) {
	ctx, cancel := context.WithTimeout(context.Background(), controllerRPCTimeout)
	defer cancel()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 2
	req.BrokerID = b.cfg.NodeID
	req.BrokerEpoch = b.brokerEpoch.Load()
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = p.id
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = p.index
	rp.LeaderEpoch = change.LeaderEpoch
	rp.PartitionEpoch = change.PartitionEpoch
	rp.NewISR = change.NewISR
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := b.ctrl.request(ctx, req)
	if err == nil {
		r := resp.(*kmsg.AlterPartitionResponse)
		if err = kerr.ErrorForCode(r.ErrorCode); err == nil && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			err = kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
		}
	}
	if err != nil {
		b.log.Warn("ISR change refused", "partition", p.name(), "new_isr", change.NewISR, "err", err)
		p.onISRChangeRejected(change, err)
		return
	}
	// Answer quickly, but let the image bring the committed state.
	if err := b.waitReconciled(ctx, b.Image().Version()); err != nil {
		b.log.Debug("ISR change committed; metadata not yet applied here", "partition", p.name())
	}
}

func splitHostPort(addr string) (string, int, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", portText, err)
	}
	return host, port, nil
}
