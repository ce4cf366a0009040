package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LogDirMoves is the state of the moves between this broker's log
// directories (AlterReplicaLogDirs, KIP-113) at a scrape: how many run,
// the throttle in force (replica.alter.log.dirs.io.max.bytes.per.second;
// Kafka's alter-log-dirs replication quota), what they copied and how
// long their copying waited on that throttle.
type LogDirMoves struct {
	InFlight    int
	Rate        int64
	CopiedBytes int64
	Throttled   time.Duration
}

var (
	logDirMovesDesc = prometheus.NewDesc(namespace+"_log_dir_moves",
		"Moves of replicas between this broker's log directories under way (AlterReplicaLogDirs).", nil, nil)
	logDirMoveRateDesc = prometheus.NewDesc(namespace+"_log_dir_move_throttle_rate_bytes",
		"Bytes per second all log-directory moves may copy together (replica.alter.log.dirs.io.max.bytes.per.second); 9223372036854775807 means no throttle.", nil, nil)
	logDirMoveBytesDesc = prometheus.NewDesc(namespace+"_log_dir_move_copied_bytes_total",
		"Bytes the log-directory moves copied into future logs (the last, paused stretch included).", nil, nil)
	logDirMoveThrottledDesc = prometheus.NewDesc(namespace+"_log_dir_move_throttled_seconds_total",
		"Time the log-directory moves' copying waited on replica.alter.log.dirs.io.max.bytes.per.second.", nil, nil)
)

// RegisterLogDirMoves exports the log-directory moves, read at each
// scrape.
func (m *Metrics) RegisterLogDirMoves(read func() LogDirMoves) error {
	if m == nil {
		return nil
	}
	if err := m.reg.Register(logDirMoves{read}); err != nil {
		return fmt.Errorf("registering log directory move metrics: %w", err)
	}
	return nil
}

type logDirMoves struct{ read func() LogDirMoves }

func (l logDirMoves) Describe(ch chan<- *prometheus.Desc) {
	ch <- logDirMovesDesc
	ch <- logDirMoveRateDesc
	ch <- logDirMoveBytesDesc
	ch <- logDirMoveThrottledDesc
}

func (l logDirMoves) Collect(ch chan<- prometheus.Metric) {
	s := l.read()
	ch <- prometheus.MustNewConstMetric(logDirMovesDesc, prometheus.GaugeValue, float64(s.InFlight))
	ch <- prometheus.MustNewConstMetric(logDirMoveRateDesc, prometheus.GaugeValue, float64(s.Rate))
	ch <- prometheus.MustNewConstMetric(logDirMoveBytesDesc, prometheus.CounterValue, float64(s.CopiedBytes))
	ch <- prometheus.MustNewConstMetric(logDirMoveThrottledDesc, prometheus.CounterValue, s.Throttled.Seconds())
}
