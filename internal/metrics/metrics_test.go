package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newTestMetrics(t *testing.T, opts Options) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(reg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m, reg
}

func fetchRequest(version int16, replicaID, stateID int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.SetVersion(version)
	r.ReplicaID = replicaID
	r.ReplicaState.ID = stateID
	return r
}

func produceResponse(code int16) *kmsg.ProduceResponse {
	r := kmsg.NewPtrProduceResponse()
	p := kmsg.NewProduceResponseTopicPartition()
	p.ErrorCode = code
	t := kmsg.NewProduceResponseTopic()
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func TestRequestLabel(t *testing.T) {
	tests := []struct {
		name string
		req  kmsg.Request
		want string
	}{
		{"produce", kmsg.NewPtrProduceRequest(), "Produce"},
		{"metadata", kmsg.NewPtrMetadataRequest(), "Metadata"},
		{"consumer fetch v11", fetchRequest(11, -1, -1), FetchConsumer},
		{"follower fetch v11", fetchRequest(11, 2, -1), FetchFollower},
		{"broker 0 follower fetch v11", fetchRequest(11, 0, -1), FetchFollower},
		{"consumer fetch v15 ignores old field", fetchRequest(15, 3, -1), FetchConsumer},
		{"follower fetch v15", fetchRequest(15, -1, 1), FetchFollower},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RequestLabel(tt.req); got != tt.want {
				t.Errorf("RequestLabel = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestObserveRequest(t *testing.T) {
	m, reg := newTestMetrics(t, Options{})
	m.ObserveRequest(kmsg.NewPtrProduceRequest(), produceResponse(0), 3*time.Millisecond)
	m.ObserveRequest(kmsg.NewPtrProduceRequest(), produceResponse(6), time.Millisecond) // NOT_LEADER_OR_FOLLOWER
	m.ObserveRequest(kmsg.NewPtrProduceRequest(), nil, time.Millisecond)                // acks=0
	m.ObserveRequest(fetchRequest(12, -1, -1), kmsg.NewPtrFetchResponse(), 500*time.Millisecond)
	m.ObserveRequest(fetchRequest(12, 1, -1), kmsg.NewPtrFetchResponse(), time.Second)
	m.ObserveRequest(nil, nil, time.Second) // ignored

	counts := []struct {
		api, errName string
		want         float64
	}{
		{"Produce", "NONE", 2},
		{"Produce", "NOT_LEADER_FOR_PARTITION", 1},
		{FetchConsumer, "NONE", 1},
		{FetchFollower, "NONE", 1},
	}
	for _, c := range counts {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(c.api, c.errName)); got != c.want {
			t.Errorf("requests{api=%s,error=%s} = %v, want %v", c.api, c.errName, got, c.want)
		}
	}
	durations := map[string]uint64{"Produce": 3, FetchConsumer: 1, FetchFollower: 1}
	for api, want := range durations {
		h := findMetric(t, reg, "skein_request_duration_seconds", "api", api).GetHistogram()
		if h.GetSampleCount() != want {
			t.Errorf("request_duration_seconds{api=%s} count = %d, want %d", api, h.GetSampleCount(), want)
		}
	}
}

func TestErrorLabel(t *testing.T) {
	tests := []struct {
		code int16
		want string
	}{
		{0, "NONE"},
		{-1, "UNKNOWN_SERVER_ERROR"},
		{3, "UNKNOWN_TOPIC_OR_PARTITION"},
		{32767, "UNKNOWN_ERROR_CODE"},
	}
	for _, tt := range tests {
		if got := ErrorLabel(tt.code); got != tt.want {
			t.Errorf("ErrorLabel(%d) = %q, want %q", tt.code, got, tt.want)
		}
	}
}

func TestEventCounters(t *testing.T) {
	m, reg := newTestMetrics(t, Options{})
	m.IncISRShrink()
	m.IncISRShrink()
	m.IncISRExpand()
	m.IncLeaderElection(false)
	m.IncLeaderElection(true)
	m.AddReplicationBytesIn(100)
	m.AddReplicationBytesOut(-5) // ignored: counters never go down
	m.ObserveFsync(2 * time.Millisecond)
	m.ConnectionOpened("PLAINTEXT")
	m.ConnectionOpened("PLAINTEXT")
	m.ConnectionClosed("PLAINTEXT")
	m.ConnectionRefused("PLAINTEXT", "max_connections_per_ip")
	m.ConnectionRefused("PLAINTEXT", "max_connections_per_ip")
	m.ConnectionTimedOut("PLAINTEXT", "idle")
	m.AuthorizationDenied("TOPIC")
	m.AuthorizationDenied("TOPIC")
	m.AuthorizationDenied("GROUP")
	m.FetchParked(true)
	m.FetchParked(true)
	m.FetchParked(false)
	m.ObserveTxnVerification(0, time.Millisecond)
	m.ObserveTxnVerification(0, time.Millisecond)
	m.ObserveTxnVerification(48, time.Millisecond)
	m.FetchUnparked(true)

	want := `
# HELP skein_isr_expands_total Replicas added back to the in-sync replica set of partitions this broker leads.
# TYPE skein_isr_expands_total counter
skein_isr_expands_total 1
# HELP skein_isr_shrinks_total Replicas removed from the in-sync replica set of partitions this broker leads.
# TYPE skein_isr_shrinks_total counter
skein_isr_shrinks_total 2
# HELP skein_leader_elections_total Partition leader elections decided by this broker while it was the active controller, clean and unclean.
# TYPE skein_leader_elections_total counter
skein_leader_elections_total 2
# HELP skein_unclean_leader_elections_total Leader elections that chose a replica outside the in-sync set (possible data loss).
# TYPE skein_unclean_leader_elections_total counter
skein_unclean_leader_elections_total 1
# HELP skein_replication_bytes_in_total Record bytes this broker fetched from leaders as a follower.
# TYPE skein_replication_bytes_in_total counter
skein_replication_bytes_in_total 100
# HELP skein_replication_bytes_out_total Record bytes this broker sent to followers as a leader.
# TYPE skein_replication_bytes_out_total counter
skein_replication_bytes_out_total 0
# HELP skein_connections Open client connections, by listener.
# TYPE skein_connections gauge
skein_connections{listener="PLAINTEXT"} 1
# HELP skein_connections_refused_total Connections closed on accept by a connection limit, by listener and reason (max_connections, listener_max_connections, max_connections_per_ip).
# TYPE skein_connections_refused_total counter
skein_connections_refused_total{listener="PLAINTEXT",reason="max_connections_per_ip"} 2
# HELP skein_connections_timed_out_total Connections the broker closed for silence, by listener and reason (idle: connections.max.idle.ms; request_read_timeout: a started frame did not complete within socket.request.read.timeout.ms).
# TYPE skein_connections_timed_out_total counter
skein_connections_timed_out_total{listener="PLAINTEXT",reason="idle"} 1
# HELP skein_authorization_denials_total Authorization checks the authorizer denied, by resource type (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN).
# TYPE skein_authorization_denials_total counter
skein_authorization_denials_total{resource_type="GROUP"} 1
skein_authorization_denials_total{resource_type="TOPIC"} 2
# HELP skein_fetch_purgatory_size Fetch requests parked at this broker until data arrives or their max wait ends (Kafka's PurgatorySize for delayed Fetch), by kind (FetchConsumer, FetchFollower).
# TYPE skein_fetch_purgatory_size gauge
skein_fetch_purgatory_size{api="FetchConsumer"} 1
skein_fetch_purgatory_size{api="FetchFollower"} 1
# HELP skein_txn_verifications_total Transactional produces and TxnOffsetCommits this broker, as a partition leader, verified with their transaction coordinator (KIP-890 part 1), by outcome: NONE, or the first partition's error (Kafka's VerificationFailureRate counts the others).
# TYPE skein_txn_verifications_total counter
skein_txn_verifications_total{error="INVALID_TXN_STATE"} 1
skein_txn_verifications_total{error="NONE"} 2
`
	names := []string{
		"skein_isr_expands_total", "skein_isr_shrinks_total", "skein_leader_elections_total",
		"skein_unclean_leader_elections_total", "skein_replication_bytes_in_total",
		"skein_replication_bytes_out_total", "skein_connections", "skein_connections_refused_total",
		"skein_connections_timed_out_total", "skein_fetch_purgatory_size", "skein_authorization_denials_total",
		"skein_txn_verifications_total",
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if got := testutil.CollectAndCount(m.fsyncDuration); got != 1 {
		t.Errorf("fsync histogram series = %d, want 1", got)
	}
	if h := findMetric(t, reg, "skein_fsync_duration_seconds").GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 0.002 {
		t.Errorf("fsync histogram count=%d sum=%v, want 1 and 0.002", h.GetSampleCount(), h.GetSampleSum())
	}
}

func TestNilMetricsRecordsNothing(t *testing.T) {
	var m *Metrics
	m.ObserveRequest(kmsg.NewPtrProduceRequest(), nil, time.Second)
	m.ObserveFsync(time.Second)
	m.IncISRShrink()
	m.IncISRExpand()
	m.IncLeaderElection(true)
	m.ObserveTxnVerification(48, time.Second)
	m.FetchParked(true)
	m.FetchUnparked(true)
	m.AddBytesIn("t", 1, 1)
	m.AddBytesOut("t", 1, 1)
	m.DeleteTopic("t")
	m.AddReplicationBytesIn(1)
	m.AddReplicationBytesOut(1)
	m.ConnectionOpened("x")
	m.ConnectionClosed("x")
	m.ConnectionRefused("x", "y")
	m.ConnectionTimedOut("x", "y")
	if err := m.RegisterClusterView(fakeView{}); err != nil {
		t.Errorf("RegisterClusterView on nil: %v", err)
	}
}

// Several brokers run in one test process: each needs its own registry, and
// one registry refuses a second set.
func TestRegistriesAreIndependent(t *testing.T) {
	m1, reg := newTestMetrics(t, Options{})
	m2, _ := newTestMetrics(t, Options{})
	m1.IncISRShrink()
	if got := testutil.ToFloat64(m2.isrShrinks); got != 0 {
		t.Errorf("second broker's isr shrinks = %v, want 0", got)
	}
	if _, err := New(reg, Options{}); err == nil {
		t.Error("New on a registry already holding broker metrics: want error")
	}
}

func TestNewRegistryHasRuntimeMetrics(t *testing.T) {
	reg := NewRegistry()
	if _, err := New(reg, Options{}); err != nil {
		t.Fatal(err)
	}
	findMetric(t, reg, "go_goroutines")
	findMetric(t, reg, "process_open_fds")
}

func TestMetricNamesPassLint(t *testing.T) {
	m, reg := newTestMetrics(t, Options{})
	if err := m.RegisterClusterView(fakeView{lags: []FollowerLag{{"t", 0, 1, 5}}}); err != nil {
		t.Fatal(err)
	}
	m.ObserveRequest(kmsg.NewPtrProduceRequest(), nil, time.Millisecond)
	m.AddBytesIn("t", 1, 1)
	m.ConnectionOpened("PLAINTEXT")
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// findMetric returns the one sample of name whose labels include the given
// name/value pairs.
func findMetric(t *testing.T, g prometheus.Gatherer, name string, labelPairs ...string) *dto.Metric {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labelPairs) {
				return m
			}
		}
	}
	t.Fatalf("no %s with labels %v", name, labelPairs)
	return nil
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func TestBudgetGauges(t *testing.T) {
	m, reg := newTestMetrics(t, Options{})
	if err := m.RegisterBudgets(Budgets{RequestBytes: func() int64 { return 7 }, FetchResponseBytes: func() int64 { return 9 }}); err != nil {
		t.Fatal(err)
	}
	if v := findMetric(t, reg, "skein_request_bytes_in_use").GetGauge().GetValue(); v != 7 {
		t.Errorf("request bytes gauge %v", v)
	}
	if v := findMetric(t, reg, "skein_fetch_response_bytes_in_flight").GetGauge().GetValue(); v != 9 {
		t.Errorf("fetch bytes gauge %v", v)
	}
}
