package node

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/replica"
	"github.com/skein-log/skein/internal/replication"
)

// controlledShutdownTimeout bounds how long a stopping broker waits for
// the controller to move its leaderships away.
const controlledShutdownTimeout = 30 * time.Second

// isrSender is the node wrapper of this broker's replica.ISRBatcher: the
// ISR changes its partition leaders propose go to the active controller
// (Kafka's AlterPartition) together, one request in flight at a time,
// and each outcome goes back to its partition's core, which decides
// about resends (one classifier and one backoff,
// replication.Leader.OnISRAnswer). The controller validates each change
// against the partition epoch, so a proposal computed from stale state is
// refused rather than applied; the committed state reaches the partition
// through the metadata image.
type isrSender struct {
	mu   sync.Mutex
	core replica.ISRBatcher[*partition]
}

// proposeISRChange queues an ISR change of p and, unless a request is in
// flight (its sender takes the queue next), sends it.
func (b *Broker) proposeISRChange(p *partition, change replication.ISRChange) {
	s := &b.isr
	s.mu.Lock()
	s.core.Add(p, p.id, p.index, change)
	req := s.core.Next(b.cfg.NodeID, b.brokerEpoch.Load())
	s.mu.Unlock()
	if req != nil {
		go b.sendISRChanges(req)
	}
}

// sendISRChanges sends req, hands every change's outcome to its
// partition, and goes on with what was queued meanwhile, until nothing is.
func (b *Broker) sendISRChanges(req *kmsg.AlterPartitionRequest) {
	s := &b.isr
	for req != nil {
		resp, err := b.sendAlterPartition(req)
		s.mu.Lock()
		outs := s.core.Answered(resp, err)
		s.mu.Unlock()
		for _, o := range outs {
			o.Key.onISRAnswer(o.Change, o.Err)
		}
		select {
		case <-b.stop:
			// What is still queued goes nowhere: the partitions are
			// closing, and the next incarnation proposes again.
			return
		default:
		}
		s.mu.Lock()
		req = s.core.Next(b.cfg.NodeID, b.brokerEpoch.Load())
		s.mu.Unlock()
	}
}

// sendAlterPartition sends req once on the controller connection of the
// ISR changes and returns the controller's answer or the request's
// failure.
func (b *Broker) sendAlterPartition(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), controllerRPCTimeout)
	defer cancel()
	resp, err := b.ctrlISR.request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("alter partition: %w", err)
	}
	// Answer quickly, but let the image bring the committed state.
	if err := b.waitReconciled(ctx, b.Image().Version()); err != nil {
		b.log.Debug("ISR changes committed; metadata not yet applied here", "partitions", len(req.Topics))
	}
	return resp.(*kmsg.AlterPartitionResponse), nil
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
