package txnhost

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/txn"
)

// Request is the WriteTxnMarkers request that delivers m to the
// partitions tps (all led by one broker): v1 (flexible, what Kafka 3.x
// and 4.0 send), or v2 (KIP-1228) with the transaction version for a
// transaction version 2 client's transaction.
func (m Markers) Request(tps []txn.TopicPartition) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch
	if m.TransactionVersion >= txn.TV2 {
		req.SetVersion(2)
		mk.TransactionVersion = int8(m.TransactionVersion)
	}
	idx := map[string]int{}
	for _, tp := range tps {
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(mk.Topics)
			idx[tp.Topic] = i
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = tp.Topic
			mk.Topics = append(mk.Topics, t)
		}
		mk.Topics[i].Partitions = append(mk.Topics[i].Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, mk)
	return req
}

// MarkerOutcome is what to do with one partition's answer to
// WriteTxnMarkers.
type MarkerOutcome int8

const (
	// MarkerDone: the marker is written (or can never be: the partition
	// is gone or does not take markers), as Kafka's marker channel
	// completes it.
	MarkerDone MarkerOutcome = iota
	// MarkerRetry: send it again, to the partition's leader as the image
	// then names it, after a backoff.
	MarkerRetry
	// MarkerFenced: a newer coordinator (or producer epoch) exists; stop
	// delivering this transaction's markers, that coordinator completes it.
	MarkerFenced
)

// MarkerOutcomeFor classifies a partition's error code in a
// WriteTxnMarkers answer, following Kafka's
// TransactionMarkerRequestCompletionHandler. A partition that no longer
// exists in the image is done whatever the answer (the runtime checks).
func MarkerOutcomeFor(code int16) MarkerOutcome {
	switch code {
	case 0:
		return MarkerDone
	case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
		return MarkerFenced
	case kerr.UnsupportedForMessageFormat.Code, kerr.UnsupportedVersion.Code:
		return MarkerDone
	}
	// NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
	// NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT,
	// KAFKA_STORAGE_ERROR and anything unexpected: a transaction must
	// never complete with a marker missing.
	return MarkerRetry
}
