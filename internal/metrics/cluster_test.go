package metrics

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeView is a fixed ClusterView; the collector only reads it.
type fakeView struct {
	health    PartitionHealth
	active    bool
	lags      []FollowerLag
	groupLags []GroupLag
}

func (v fakeView) PartitionHealth() PartitionHealth { return v.health }
func (v fakeView) IsActiveController() bool         { return v.active }
func (v fakeView) FollowerLags() []FollowerLag      { return v.lags }
func (v fakeView) GroupLags() []GroupLag            { return v.groupLags }
func (v fakeView) FetchSessions() FetchSessionStats {
	return FetchSessionStats{Sessions: 2, Partitions: 9, Evictions: 1}
}

const clusterGaugesHelp = `
# HELP skein_active_controller 1 if this broker is the active controller, else 0; the sum over the cluster must be 1.
# TYPE skein_active_controller gauge
# HELP skein_offline_partitions Partitions without a live leader, reported by the active controller only.
# TYPE skein_offline_partitions gauge
# HELP skein_under_replicated_partitions Partitions led by this broker whose ISR is smaller than their replica set.
# TYPE skein_under_replicated_partitions gauge
# HELP skein_under_min_isr_partitions Partitions led by this broker whose ISR is below min.insync.replicas (acks=all produces fail).
# TYPE skein_under_min_isr_partitions gauge
# HELP skein_follower_lag_max_records Largest lag of any follower of a partition this broker leads.
# TYPE skein_follower_lag_max_records gauge
# HELP skein_open_files_limit_offline_replicas Replicas assigned to this broker held closed for the open-files limit (RLIMIT_NOFILE) and answering KAFKA_STORAGE_ERROR until a reconcile opens them (Kafka's OfflineReplicaCount, of this cause).
# TYPE skein_open_files_limit_offline_replicas gauge
`

func TestClusterCollector(t *testing.T) {
	health := PartitionHealth{Partitions: 12, Leaders: 4, UnderReplicated: 2, UnderMinISR: 1, AtMinISR: 1, Offline: 3, OpenFilesLimitOffline: 5}
	tests := []struct {
		name string
		view fakeView
		want string
	}{
		{
			name: "active controller reports offline partitions",
			view: fakeView{health: health, active: true},
			want: `
skein_active_controller 1
skein_offline_partitions 3
skein_under_replicated_partitions 2
skein_under_min_isr_partitions 1
skein_follower_lag_max_records 0
skein_open_files_limit_offline_replicas 5
`,
		},
		{
			name: "other brokers report zero offline so the cluster sum counts once",
			view: fakeView{health: health, lags: []FollowerLag{{"orders", 0, 2, 40}, {"orders", 1, 3, -2}}},
			want: `
skein_active_controller 0
skein_offline_partitions 0
skein_under_replicated_partitions 2
skein_under_min_isr_partitions 1
skein_follower_lag_max_records 40
skein_open_files_limit_offline_replicas 5
`,
		},
	}
	names := []string{
		"skein_active_controller", "skein_offline_partitions", "skein_under_replicated_partitions",
		"skein_under_min_isr_partitions", "skein_follower_lag_max_records",
		"skein_open_files_limit_offline_replicas", // every broker reports its own
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewClusterCollector(tt.view)
			// The expected text must list HELP/TYPE before samples of each
			// family; interleave them by family.
			if err := testutil.CollectAndCompare(c, strings.NewReader(withHelp(tt.want)), names...); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestClusterCollectorPartitionGauges(t *testing.T) {
	m, reg := newTestMetrics(t, Options{})
	view := fakeView{
		health: PartitionHealth{Partitions: 12, Leaders: 4, AtMinISR: 1},
		lags:   []FollowerLag{{"orders", 0, 2, 40}, {"orders", 1, 3, -2}},
	}
	if err := m.RegisterClusterView(view); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"skein_partitions", nil, 12},
		{"skein_leader_partitions", nil, 4},
		{"skein_at_min_isr_partitions", nil, 1},
		{"skein_follower_lag_records", []string{"topic", "orders", "partition", "0", "replica", "2"}, 40},
		{"skein_follower_lag_records", []string{"topic", "orders", "partition", "1", "replica", "3"}, 0},
	}
	for _, tt := range tests {
		if got := findMetric(t, reg, tt.name, tt.labels...).GetGauge().GetValue(); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if err := m.RegisterClusterView(view); err == nil {
		t.Error("registering a second cluster view on one registry: want error")
	}
}

// A topic name that is not valid UTF-8 loses only its own series, not the
// scrape.
func TestClusterCollectorBadLabel(t *testing.T) {
	c := NewClusterCollector(fakeView{lags: []FollowerLag{{"bad\xff", 0, 1, 7}, {"ok", 0, 1, 1}}})
	if got := testutil.CollectAndCount(c, "skein_follower_lag_records"); got != 1 {
		t.Errorf("follower lag series = %d, want 1", got)
	}
	want := withHelp("skein_follower_lag_max_records 7")
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "skein_follower_lag_max_records"); err != nil {
		t.Error(err)
	}
}

// withHelp puts each family's HELP and TYPE lines before its sample.
func withHelp(samples string) string {
	help := map[string]string{}
	lines := strings.Split(strings.TrimSpace(clusterGaugesHelp), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		name := strings.Fields(lines[i])[2]
		help[name] = lines[i] + "\n" + lines[i+1] + "\n"
	}
	var b strings.Builder
	for _, s := range strings.Split(strings.TrimSpace(samples), "\n") {
		name := strings.Fields(s)[0]
		b.WriteString(help[name])
		b.WriteString(s + "\n")
	}
	return b.String()
}

func TestClusterCollectorGroupLag(t *testing.T) {
	m, reg := newTestMetrics(t, Options{})
	view := fakeView{groupLags: []GroupLag{
		{"billing", "orders", 0, 40}, {"billing", "orders", 1, 2}, {"audit", "orders", 0, -3},
	}}
	if err := m.RegisterClusterView(view); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"skein_consumer_group_lag_records", []string{"group", "billing", "topic", "orders", "partition", "0"}, 40},
		{"skein_consumer_group_lag_records", []string{"group", "billing", "topic", "orders", "partition", "1"}, 2},
		// A commit past a stale high watermark is not a negative lag.
		{"skein_consumer_group_lag_records", []string{"group", "audit", "topic", "orders", "partition", "0"}, 0},
		{"skein_consumer_group_lag_max_records", []string{"group", "billing"}, 40},
		{"skein_consumer_group_lag_max_records", []string{"group", "audit"}, 0},
		{"skein_incremental_fetch_sessions", nil, 2},
		{"skein_incremental_fetch_partitions_cached", nil, 9},
	}
	for _, tt := range tests {
		if got := findMetric(t, reg, tt.name, tt.labels...).GetGauge().GetValue(); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
}

func TestBuildInfo(t *testing.T) {
	reg := NewRegistry()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "skein_build_info" {
			continue
		}
		m := mf.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if m.GetGauge().GetValue() != 1 || labels["goversion"] != runtime.Version() || labels["version"] == "" || labels["revision"] == "" {
			t.Fatalf("skein_build_info %v = %v", labels, m.GetGauge().GetValue())
		}
		return
	}
	t.Fatal("no skein_build_info in a new registry")
}
