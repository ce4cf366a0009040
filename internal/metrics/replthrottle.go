package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// ReplicationThrottle is the replication quotas' state (KIP-73) at a
// scrape: the rates in force, from the dynamic or static
// leader/follower.replication.throttled.rate, and the bytes throttled
// replication moved so far.
type ReplicationThrottle struct {
	LeaderRate, FollowerRate   int64
	LeaderBytes, FollowerBytes int64
}

var (
	replThrottleRateDesc = prometheus.NewDesc(namespace+"_replication_throttle_rate_bytes",
		"Bytes per second the replication throttle allows, by side (leader: sent to throttled followers; follower: fetched for throttled replicas); 9223372036854775807 means no throttle.",
		[]string{"side"}, nil)
	replThrottleBytesDesc = prometheus.NewDesc(namespace+"_replication_throttled_bytes_total",
		"Bytes of throttled replication traffic (replicas named by leader/follower.replication.throttled.replicas and out of the ISR), by side.",
		[]string{"side"}, nil)
)

// RegisterReplicationThrottle exports the replication throttle, read at
// each scrape.
func (m *Metrics) RegisterReplicationThrottle(read func() ReplicationThrottle) error {
	if m == nil {
		return nil
	}
	if err := m.reg.Register(replThrottle{read}); err != nil {
		return fmt.Errorf("registering replication throttle metrics: %w", err)
	}
	return nil
}

type replThrottle struct{ read func() ReplicationThrottle }

func (r replThrottle) Describe(ch chan<- *prometheus.Desc) {
	ch <- replThrottleRateDesc
	ch <- replThrottleBytesDesc
}

func (r replThrottle) Collect(ch chan<- prometheus.Metric) {
	s := r.read()
	ch <- prometheus.MustNewConstMetric(replThrottleRateDesc, prometheus.GaugeValue, float64(s.LeaderRate), "leader")
	ch <- prometheus.MustNewConstMetric(replThrottleRateDesc, prometheus.GaugeValue, float64(s.FollowerRate), "follower")
	ch <- prometheus.MustNewConstMetric(replThrottleBytesDesc, prometheus.CounterValue, float64(s.LeaderBytes), "leader")
	ch <- prometheus.MustNewConstMetric(replThrottleBytesDesc, prometheus.CounterValue, float64(s.FollowerBytes), "follower")
}
