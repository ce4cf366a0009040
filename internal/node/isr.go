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

// ISR proposal resends: a proposal whose outcome is unknown is sent again
// after a backoff that doubles up to the cap. There is no attempt limit:
// giving up would either drop the proposal (unsafe: the controller may
// commit it, and its additions must keep bounding the HW) or keep it
// pending with nobody resending (the partition could never change its ISR
// again). The loop ends when the outcome is known: an answer, or metadata
// that settles it (see partition.isrChangePending), or the broker stops.
const (
	isrResendBackoffMin = 100 * time.Millisecond
	isrResendBackoffMax = 2 * time.Second
)

// proposeISRChange sends an ISR change the partition's replication state
// proposed to the active controller (Kafka's AlterPartition) until its
// outcome is known. The controller validates it against the partition
// epoch, so a proposal computed from stale state is refused rather than
// applied; the committed state reaches the partition through the metadata
// image. An error that leaves the outcome open (no answer, NOT_CONTROLLER
// from a controller that may have proposed the entry before losing office,
// STALE_BROKER_EPOCH while this broker re-registers, a commit timeout) is
// not a refusal: the proposal stays pending and is resent, as Kafka's
// AlterPartitionManager does.
func (b *Broker) proposeISRChange(p *partition, change replication.ISRChange) {
	send := func() error {
		err := b.sendISRChange(p, change)
		if err != nil && replication.ISRChangeOutcomeUnknown(err) {
			b.log.Info("ISR change outcome unknown; resending", "partition", p.name(), "new_isr", change.NewISR, "err", err)
		}
		return err
	}
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-b.stop:
			return false
		case <-t.C:
			return true
		}
	}
	pending := func() bool { return p.isrChangePending(change) }
	if err := untilISROutcomeKnown(send, pending, wait); err != nil {
		b.log.Warn("ISR change refused", "partition", p.name(), "new_isr", change.NewISR, "err", err)
		p.onISRChangeRejected(change, err)
	}
}

// untilISROutcomeKnown sends one ISR proposal until its outcome is known
// and returns the controller's refusal, or nil when it was accepted or no
// longer matters. After an unknown outcome it waits (wait returns false
// when the broker stops) and resends only if the proposal is still
// pending.
func untilISROutcomeKnown(send func() error, pending func() bool, wait func(time.Duration) bool) error {
	backoff := isrResendBackoffMin
	for {
		err := send()
		if err == nil || !replication.ISRChangeOutcomeUnknown(err) {
			return err
		}
		if !wait(backoff) || !pending() {
			return nil
		}
		backoff = min(2*backoff, isrResendBackoffMax)
	}
}

// sendISRChange sends change once and returns the controller's error
// answer or the request's failure.
func (b *Broker) sendISRChange(p *partition, change replication.ISRChange) error {
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
	if err != nil {
		return fmt.Errorf("alter partition: %w", err)
	}
	r := resp.(*kmsg.AlterPartitionResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return err
	}
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		// Not an answer about this partition: its fate is unknown.
		return fmt.Errorf("alter partition: answer has %d topics, want 1 with 1 partition", len(r.Topics))
	}
	if err := kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode); err != nil {
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
