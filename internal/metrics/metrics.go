package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// namespace prefixes every metric name.
const namespace = "skein"

// DefaultMaxTopics bounds how many topics get their own series in the
// per-topic metrics. A scrape must stay small enough to be useful; traffic of
// topics beyond the cap is added to the OtherTopics series instead.
const DefaultMaxTopics = 10_000

// requestDurationBuckets span a sub-millisecond metadata call to a fetch
// long poll (30 s maximum wait) or a slow acks=all produce.
var requestDurationBuckets = []float64{
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// fsyncDurationBuckets span a battery-backed controller (tens of
// microseconds) to a disk that is failing (seconds).
var fsyncDurationBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
}

// Options tunes a Metrics. The zero value gives the defaults.
type Options struct {
	// MaxTopics caps the topics with their own per-topic series
	// (0: DefaultMaxTopics).
	MaxTopics int
}

// Metrics is one broker's set of metrics, registered on that broker's
// registry. A nil *Metrics is valid and records nothing.
type Metrics struct {
	reg prometheus.Registerer

	requests        *prometheus.CounterVec   // api, error
	requestDuration *prometheus.HistogramVec // api
	fsyncDuration   prometheus.Histogram
	// pageCacheDropped: bytes of durable log data advised out of the
	// page cache (log.page.cache.window.bytes, log.page.cache.broker.bytes).
	pageCacheDropped prometheus.Counter

	isrShrinks       prometheus.Counter
	isrExpands       prometheus.Counter
	leaderElections  prometheus.Counter
	uncleanElections prometheus.Counter

	replicationBytesIn  prometheus.Counter
	replicationBytesOut prometheus.Counter

	connections *prometheus.GaugeVec // listener
	// connectionsRefused: listener, reason (connlimit.Reason).
	connectionsRefused *prometheus.CounterVec
	// authorizationDenials: resource_type (TOPIC, GROUP, CLUSTER, ...).
	authorizationDenials *prometheus.CounterVec
	// connectionsClosed: listener, reason (idle, request_read_timeout).
	connectionsTimedOut *prometheus.CounterVec
	tlsFailures         *prometheus.CounterVec
	saslAuths           *prometheus.CounterVec

	fetchPurgatory *prometheus.GaugeVec // api: FetchConsumer or FetchFollower

	compactions            prometheus.Counter
	compactionBytesRemoved prometheus.Counter

	offlineLogDirs prometheus.Gauge

	txnVerifications        *prometheus.CounterVec // error
	txnVerificationDuration prometheus.Histogram

	topics *topicTable
}

// NewRegistry returns a registry for one broker, already holding the Go
// runtime (go_*) and process (process_*: CPU, memory, open files)
// collectors that operators expect next to the broker's own metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister( // cannot fail: a fresh registry, distinct collectors
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(),
	)
	return reg
}

// New creates a broker's metrics and registers them on reg. It fails if reg
// already holds metrics of the same names (one Metrics per registry).
func New(reg prometheus.Registerer, opts Options) (*Metrics, error) {
	if opts.MaxTopics <= 0 {
		opts.MaxTopics = DefaultMaxTopics
	}
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "requests_total",
			Help: "Requests answered, by API (Fetch split into FetchConsumer and FetchFollower) and the first error code of the answer (NONE on success).",
		}, []string{"api", "error"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "request_duration_seconds",
			Help:    "Time from a decoded request to its answer, by API (Fetch split into FetchConsumer and FetchFollower).",
			Buckets: requestDurationBuckets,
		}, []string{"api"}),
		fsyncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "fsync_duration_seconds",
			Help:    "Duration of partition log fsyncs (one fsync covers every batch appended before it started).",
			Buckets: fsyncDurationBuckets,
		}),
		pageCacheDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "log_page_cache_dropped_bytes_total",
			Help: "Bytes of durable partition log data advised out of the page cache (posix_fadvise POSIX_FADV_DONTNEED) because they fell outside log.page.cache.window.bytes or the broker's log.page.cache.broker.bytes; reads of them go to the disk.",
		}),
		isrShrinks: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "isr_shrinks_total",
			Help: "Replicas removed from the in-sync replica set of partitions this broker leads.",
		}),
		isrExpands: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "isr_expands_total",
			Help: "Replicas added back to the in-sync replica set of partitions this broker leads.",
		}),
		leaderElections: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "leader_elections_total",
			Help: "Partition leader elections decided by this broker while it was the active controller, clean and unclean.",
		}),
		uncleanElections: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "unclean_leader_elections_total",
			Help: "Leader elections that chose a replica outside the in-sync set (possible data loss).",
		}),
		replicationBytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "replication_bytes_in_total",
			Help: "Record bytes this broker fetched from leaders as a follower.",
		}),
		replicationBytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "replication_bytes_out_total",
			Help: "Record bytes this broker sent to followers as a leader.",
		}),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "connections",
			Help: "Open client connections, by listener.",
		}, []string{"listener"}),
		connectionsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "connections_refused_total",
			Help: "Connections closed on accept by a connection limit, by listener and reason (max_connections, listener_max_connections, max_connections_per_ip).",
		}, []string{"listener", "reason"}),
		connectionsTimedOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "connections_timed_out_total",
			Help: "Connections the broker closed for silence, by listener and reason (idle: connections.max.idle.ms; request_read_timeout: a started frame did not complete within socket.request.read.timeout.ms).",
		}, []string{"listener", "reason"}),
		tlsFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "tls_handshake_failures_total",
			Help: "Connections closed because TLS did not start, by listener and reason (plaintext_on_tls: the client spoke no TLS; tls_on_plaintext: a TLS hello on a plaintext listener; " +
				"timeout: ssl.handshake.timeout.ms passed; no_client_certificate, untrusted_certificate: ssl.client.auth refused the client; principal_mapping: no ssl.principal.mapping.rules rule applies to its certificate; handshake: any other handshake failure).",
		}, []string{"listener", "reason"}),
		saslAuths: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "sasl_authentications_total",
			Help: "SASL authentications by listener, mechanism and result (success; failure: a wrong password or an unsupported mechanism; " +
				"unauthenticated_request: a request other than ApiVersions or SASL before authenticating, which closes the connection; " +
				"reauthentication_success, reauthentication_failure: KIP-368 logins again on an open connection, a failure closing it; " +
				"expired: a connection closed because its connections.max.reauth.ms lifetime passed without a re-authentication).",
		}, []string{"listener", "mechanism", "result"}),
		authorizationDenials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "authorization_denials_total",
			Help: "Authorization checks the authorizer denied, by resource type (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN).",
		}, []string{"resource_type"}),
		fetchPurgatory: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "fetch_purgatory_size",
			Help: "Fetch requests parked at this broker until data arrives or their max wait ends (Kafka's PurgatorySize for delayed Fetch), by kind (FetchConsumer, FetchFollower).",
		}, []string{"api"}),
		compactions: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "log_compactions_total",
			Help: "Log cleaner passes that compacted a partition replica on this broker.",
		}),
		compactionBytesRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "log_compaction_bytes_removed_total",
			Help: "Bytes of log the cleaner removed from partition replicas on this broker.",
		}),
		offlineLogDirs: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "offline_log_dirs",
			Help: "Log directories taken offline after a disk error (Kafka's OfflineLogDirectoryCount); the broker then hands over and stops.",
		}),
		txnVerifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "txn_verifications_total",
			Help: "Transactional produces and TxnOffsetCommits this broker, as a partition leader, verified with their transaction coordinator (KIP-890 part 1), by outcome: NONE, or the first partition's error (Kafka's VerificationFailureRate counts the others).",
		}, []string{"error"}),
		txnVerificationDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "txn_verification_duration_seconds",
			Help:    "Time from a verification's start to the coordinator's answer (Kafka's VerificationTimeMs), batching wait included.",
			Buckets: requestDurationBuckets,
		}),
		topics: newTopicTable(opts.MaxTopics),
	}
	collectors := []prometheus.Collector{
		m.requests, m.requestDuration, m.fsyncDuration, m.pageCacheDropped,
		m.isrShrinks, m.isrExpands, m.leaderElections, m.uncleanElections,
		m.replicationBytesIn, m.replicationBytesOut, m.connections, m.connectionsRefused, m.connectionsTimedOut, m.tlsFailures, m.saslAuths, m.fetchPurgatory,
		m.authorizationDenials,
		m.compactions, m.compactionBytesRemoved, m.offlineLogDirs,
		m.txnVerifications, m.txnVerificationDuration,
	}
	collectors = append(collectors, m.topics.collectors()...)
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering broker metrics: %w", err)
		}
	}
	return m, nil
}

// ObserveTxnVerification records one verification with a transaction
// coordinator: its outcome (the first failed partition's error code, 0
// when every partition was verified) and how long it took.
func (m *Metrics) ObserveTxnVerification(code int16, elapsed time.Duration) {
	if m == nil {
		return
	}
	if c, err := m.txnVerifications.GetMetricWithLabelValues(ErrorLabel(code)); err == nil {
		c.Inc()
	}
	m.txnVerificationDuration.Observe(elapsed.Seconds())
}

// LogDirOffline counts a log directory taken offline after a disk error.
func (m *Metrics) LogDirOffline() {
	if m == nil {
		return
	}
	m.offlineLogDirs.Inc()
}

// ObserveCompaction records one cleaner pass over a partition replica that
// rewrote bytesBefore bytes of log into bytesAfter.
func (m *Metrics) ObserveCompaction(bytesBefore, bytesAfter int64) {
	if m == nil {
		return
	}
	m.compactions.Inc()
	m.compactionBytesRemoved.Add(float64(max(bytesBefore-bytesAfter, 0)))
}

// ObserveFsync records one partition log fsync.
func (m *Metrics) ObserveFsync(d time.Duration) {
	if m == nil {
		return
	}
	m.fsyncDuration.Observe(d.Seconds())
}

// AddPageCacheDropped counts bytes of log data advised out of the page
// cache (storage.Log.DropCache).
func (m *Metrics) AddPageCacheDropped(n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.pageCacheDropped.Add(float64(n))
}

// IncISRShrink counts a replica leaving the ISR of a partition this broker leads.
func (m *Metrics) IncISRShrink() {
	if m == nil {
		return
	}
	m.isrShrinks.Inc()
}

// IncISRExpand counts a replica rejoining the ISR of a partition this broker leads.
func (m *Metrics) IncISRExpand() {
	if m == nil {
		return
	}
	m.isrExpands.Inc()
}

// IncLeaderElection counts one partition leader election decided by the
// active controller; unclean ones are counted in both series, as in Kafka.
func (m *Metrics) IncLeaderElection(unclean bool) {
	if m == nil {
		return
	}
	m.leaderElections.Inc()
	if unclean {
		m.uncleanElections.Inc()
	}
}

// AddReplicationBytesIn counts record bytes fetched from a leader.
func (m *Metrics) AddReplicationBytesIn(bytes int64) {
	if m == nil || bytes <= 0 {
		return
	}
	m.replicationBytesIn.Add(float64(bytes))
}

// AddReplicationBytesOut counts record bytes sent to a follower.
func (m *Metrics) AddReplicationBytesOut(bytes int64) {
	if m == nil || bytes <= 0 {
		return
	}
	m.replicationBytesOut.Add(float64(bytes))
}

// FetchParked counts a Fetch parked to wait for data (a follower's when
// follower is set). The gauge lets an operator, or a test, see whether a
// broker holds long polls it will answer later.
func (m *Metrics) FetchParked(follower bool) { m.addFetchPurgatory(follower, 1) }

// FetchUnparked counts a parked Fetch answered (its answer already read).
func (m *Metrics) FetchUnparked(follower bool) { m.addFetchPurgatory(follower, -1) }

func (m *Metrics) addFetchPurgatory(follower bool, delta float64) {
	if m == nil {
		return
	}
	kind := FetchConsumer
	if follower {
		kind = FetchFollower
	}
	if g, err := m.fetchPurgatory.GetMetricWithLabelValues(kind); err == nil {
		g.Add(delta)
	}
}

// ConnectionOpened counts an accepted connection on a listener.
func (m *Metrics) ConnectionOpened(listener string) {
	if m == nil {
		return
	}
	if g, err := m.connections.GetMetricWithLabelValues(listener); err == nil {
		g.Inc()
	}
}

// ConnectionRefused counts a connection closed on accept by a limit.
func (m *Metrics) ConnectionRefused(listener, reason string) {
	if m == nil {
		return
	}
	if c, err := m.connectionsRefused.GetMetricWithLabelValues(listener, reason); err == nil {
		c.Inc()
	}
}

// AuthorizationDenied counts one denied authorization check.
func (m *Metrics) AuthorizationDenied(resourceType string) {
	if m == nil {
		return
	}
	if c, err := m.authorizationDenials.GetMetricWithLabelValues(resourceType); err == nil {
		c.Inc()
	}
}

// ConnectionTimedOut counts a connection closed for silence.
func (m *Metrics) ConnectionTimedOut(listener, reason string) {
	if m == nil {
		return
	}
	if c, err := m.connectionsTimedOut.GetMetricWithLabelValues(listener, reason); err == nil {
		c.Inc()
	}
}

// TLSFailed counts a connection closed because TLS did not start.
func (m *Metrics) TLSFailed(listener, reason string) {
	if m == nil {
		return
	}
	if c, err := m.tlsFailures.GetMetricWithLabelValues(listener, reason); err == nil {
		c.Inc()
	}
}

// SASLAuthentication counts one SASL outcome.
func (m *Metrics) SASLAuthentication(listener, mechanism, result string) {
	if m == nil {
		return
	}
	if c, err := m.saslAuths.GetMetricWithLabelValues(listener, mechanism, result); err == nil {
		c.Inc()
	}
}

// ConnectionClosed counts a closed connection on a listener.
func (m *Metrics) ConnectionClosed(listener string) {
	if m == nil {
		return
	}
	if g, err := m.connections.GetMetricWithLabelValues(listener); err == nil {
		g.Dec()
	}
}
