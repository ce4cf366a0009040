package txnhost

import "github.com/twmb/franz-go/pkg/kerr"

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
