package node

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/replica"
	"github.com/skein-log/skein/internal/replication"
)

// controlledShutdownTimeout bounds how long a stopping broker waits for
// the controller to move its leaderships away.
const controlledShutdownTimeout = 30 * time.Second

// proposeISRChange sends an ISR change the partition's replication state
// proposed to the active controller (Kafka's AlterPartition) and hands the
// outcome to the partition's core, which decides about resends (one
// classifier and one backoff, replication.Leader.OnISRAnswer). The
// controller validates it against the partition epoch, so a proposal
// computed from stale state is refused rather than applied; the committed
// state reaches the partition through the metadata image.
func (b *Broker) proposeISRChange(p *partition, change replication.ISRChange) {
	p.onISRAnswer(change, b.sendISRChange(p, change))
}

// sendISRChange sends change once and returns the controller's error
// answer or the request's failure.
func (b *Broker) sendISRChange(p *partition, change replication.ISRChange) error {
	ctx, cancel := context.WithTimeout(context.Background(), controllerRPCTimeout)
	defer cancel()
	req := replica.AlterPartitionRequest(b.cfg.NodeID, b.brokerEpoch.Load(), p.id, p.index, change)
	resp, err := b.ctrl.request(ctx, req)
	if err != nil {
		return fmt.Errorf("alter partition: %w", err)
	}
	if err := replica.AlterPartitionOutcome(resp.(*kmsg.AlterPartitionResponse)); err != nil {
		return err
	}
	// Answer quickly, but let the image bring the committed state.
	if err := b.waitReconciled(ctx, b.Image().Version()); err != nil {
		b.log.Debug("ISR change committed; metadata not yet applied here", "partition", p.name())
	}
	return nil
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
