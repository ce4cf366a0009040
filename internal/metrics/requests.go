package metrics

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request labels Kafka operators know for the two kinds of Fetch.
const (
	FetchConsumer = "FetchConsumer"
	FetchFollower = "FetchFollower"
)

// fetchReplicaStateVersion is the first Fetch version that carries the
// follower's id in ReplicaState instead of ReplicaID (KIP-903).
const fetchReplicaStateVersion = 15

// ObserveRequest records one answered request: its count, by API and the
// answer's first error code, and its latency. resp is nil for an acks=0
// produce, which has no answer; it counts as a success.
func (m *Metrics) ObserveRequest(req kmsg.Request, resp kmsg.Response, elapsed time.Duration) {
	if m == nil || req == nil {
		return
	}
	api := RequestLabel(req)
	if c, err := m.requests.GetMetricWithLabelValues(api, ErrorLabel(ResponseErrorCode(resp))); err == nil {
		c.Inc()
	}
	if h, err := m.requestDuration.GetMetricWithLabelValues(api); err == nil {
		h.Observe(elapsed.Seconds())
	}
}

// RequestLabel names a request as Kafka's RequestMetrics do: the API name,
// except that Fetch is FetchFollower when a broker replica sends it and
// FetchConsumer otherwise.
func RequestLabel(req kmsg.Request) string {
	if f, ok := req.(*kmsg.FetchRequest); ok {
		replica := f.ReplicaID
		if f.GetVersion() >= fetchReplicaStateVersion {
			replica = f.ReplicaState.ID
		}
		if replica >= 0 {
			return FetchFollower
		}
		return FetchConsumer
	}
	return kmsg.NameForKey(req.Key())
}

// ErrorLabel names a Kafka error code: "NONE" for 0, the protocol's name
// (NOT_LEADER_OR_FOLLOWER, ...) for a known code, and "UNKNOWN_ERROR_CODE"
// otherwise, so the label's values stay a small fixed set.
func ErrorLabel(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && ke.Code == code {
		return ke.Message
	}
	return "UNKNOWN_ERROR_CODE"
}
