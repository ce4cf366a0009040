package node

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/txn"
	"github.com/skein-log/skein/internal/txnhost"
)

// Marker delivery backs off from markerBackoffMin doubling to
// markerBackoffMax between rounds while some partition still lacks its
// marker (a leader moving, a partition below min.insync.replicas).
const (
	markerBackoffMin = 50 * time.Millisecond
	markerBackoffMax = 2 * time.Second
	markerTimeout    = 30 * time.Second
)

// deliverMarkers writes one transaction's markers to the leaders of its
// partitions, as the image names them at each round, until every
// partition has it (txnhost.MarkerOutcomeFor decides per answer), then
// reports it to the coordinator, which writes the completion. It gives up
// when the coordinator stops (the next one sends them again from the
// prepared state it loads) or is fenced.
func (rt *txnRuntime) deliverMarkers(tc *txnCoordinator, m txnhost.Markers) {
	left := map[txn.TopicPartition]bool{}
	for _, tp := range m.Partitions {
		left[tp] = true
	}
	backoff := markerBackoffMin
	fenced := false
	for len(left) > 0 {
		if tc.isStopped() {
			return
		}
		byLeader := map[int32][]txn.TopicPartition{}
		im := rt.b.Image()
		for tp := range left {
			t, ok := im.Topic(tp.Topic)
			if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
				delete(left, tp) // deleted: nothing to mark, as in Kafka
				continue
			}
			if l := t.Partitions[tp.Partition].Leader; l >= 0 {
				byLeader[l] = append(byLeader[l], tp)
			}
		}
		// Each leader in its own goroutine: one that is slow to answer
		// (paused, partitioned) does not hold the others' markers back.
		type answer struct {
			leader int32
			codes  map[txn.TopicPartition]int16
			err    error
		}
		answers := make(chan answer, len(byLeader))
		for leader, tps := range byLeader {
			go func() {
				codes, err := rt.sendMarkers(leader, m, tps)
				answers <- answer{leader, codes, err}
			}()
		}
		for range byLeader {
			a := <-answers
			if a.err != nil {
				rt.b.log.Debug("sending transaction markers", "leader", a.leader, "transactional_id", m.TransactionalID, "err", a.err)
				continue
			}
			for tp, code := range a.codes {
				switch txnhost.MarkerOutcomeFor(code) {
				case txnhost.MarkerDone:
					delete(left, tp)
				case txnhost.MarkerFenced:
					rt.b.log.Warn("transaction markers fenced; a newer coordinator completes the transaction",
						"transactional_id", m.TransactionalID, "partition", fmt.Sprintf("%s-%d", tp.Topic, tp.Partition), "code", code)
					fenced = true
				}
			}
		}
		if fenced {
			return
		}
		if len(left) == 0 {
			break
		}
		select {
		case <-time.After(backoff):
		case <-rt.b.stop:
			return
		}
		backoff = min(2*backoff, markerBackoffMax)
	}
	_ = tc.Do(func(h *txnhost.Host, now int64) (txnhost.Ready, error) { return h.MarkersWritten(now, m), nil })
}

// sendMarkers sends one WriteTxnMarkers request to leader for the
// partitions tps and returns each partition's error code.
func (rt *txnRuntime) sendMarkers(leader int32, m txnhost.Markers, tps []txn.TopicPartition) (map[txn.TopicPartition]int16, error) {
	req := m.Request(tps)
	conn, err := rt.markerConns.get(leader)
	if err != nil {
		return nil, err
	}
	ctx, cancel := rt.requestContext()
	defer cancel()
	resp, err := conn.Request(ctx, req)
	if err != nil {
		rt.markerConns.drop(leader, conn)
		return nil, err
	}
	codes := map[txn.TopicPartition]int16{}
	for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		if rm.ProducerID != m.ProducerID {
			continue
		}
		for _, t := range rm.Topics {
			for _, p := range t.Partitions {
				codes[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	return codes, nil
}

// requestContext bounds one dial or request by markerTimeout and ends it
// when the broker stops.
func (rt *txnRuntime) requestContext() (context.Context, context.CancelFunc) {
	return stopContext(rt.b, markerTimeout)
}
