package metrics

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// maxGroupLagSeries bounds the per-partition consumer-group lag series of
// one scrape; skein_consumer_group_lag_max_records still covers them all.
const maxGroupLagSeries = 100_000

// maxFollowerLagSeries bounds the per-replica lag series of one scrape;
// skein_follower_lag_max_records still covers every replica.
const maxFollowerLagSeries = 100_000

// PartitionHealth is this broker's view of partition health, computed at
// scrape time. Counts about partitions are those this broker leads, so that
// summing over the cluster counts each partition once (as Kafka does).
type PartitionHealth struct {
	Partitions      int // replicas hosted on this broker (PartitionCount)
	Leaders         int // partitions this broker leads (LeaderCount)
	UnderReplicated int // led here, ISR smaller than the replica set
	UnderMinISR     int // led here, ISR smaller than min.insync.replicas
	AtMinISR        int // led here, ISR exactly min.insync.replicas
	// Offline is the cluster-wide count of partitions without a live
	// leader. It is reported only while this broker is the active
	// controller, so it may be computed on every broker.
	Offline int
	// OpenFilesLimitOffline is the replicas assigned here that are held
	// closed for the open-files limit (RLIMIT_NOFILE), answering
	// KAFKA_STORAGE_ERROR: offline replicas in Kafka's terms
	// (OfflineReplicaCount), of this one cause.
	OpenFilesLimitOffline int
}

// FollowerLag is how far one follower replica is behind its leader here.
type FollowerLag struct {
	Topic     string
	Partition int32
	Replica   int32 // follower broker id
	Records   int64 // leader's log end offset minus the follower's
}

// GroupLag is how far one consumer group's committed offset on a
// partition is behind that partition's high watermark.
type GroupLag struct {
	Group     string
	Topic     string
	Partition int32
	Records   int64
}

// ClusterView is what the scrape-time collector reads from the broker. Its
// methods are called from the scraping goroutine, concurrently with the
// broker's work, so they must be safe for concurrent use and quick: they
// read the current metadata image and partition state and never wait for
// I/O.
type ClusterView interface {
	PartitionHealth() PartitionHealth
	IsActiveController() bool
	// FollowerLags lists the followers of partitions this broker leads.
	FollowerLags() []FollowerLag
	// GroupLags lists the committed offsets of the groups this broker
	// coordinates, for partitions whose high watermark it knows.
	GroupLags() []GroupLag
	// FetchSessions is the size of the fetch session cache (KIP-227) and
	// the sessions evicted from it so far.
	FetchSessions() FetchSessionStats
}

// FetchSessionStats describes the fetch session cache, as Kafka's
// FetchSessionCache metrics do.
type FetchSessionStats struct {
	Sessions   int
	Partitions int
	Evictions  uint64
}

// RegisterClusterView registers the collector that reads view at each
// scrape, on the registry given to New.
func (m *Metrics) RegisterClusterView(view ClusterView) error {
	if m == nil {
		return nil
	}
	if err := m.reg.Register(NewClusterCollector(view)); err != nil {
		return fmt.Errorf("registering cluster metrics: %w", err)
	}
	return nil
}

// clusterCollector turns a ClusterView into gauges at scrape time. Reading
// state when asked, instead of setting gauges as it changes, means no
// series goes stale when leadership moves or a partition is deleted.
type clusterCollector struct {
	view ClusterView

	partitions, leaders, underReplicated, underMinISR, atMinISR  *prometheus.Desc
	offline, activeController, openFilesLimitOffline             *prometheus.Desc
	followerLag, followerLagMax                                  *prometheus.Desc
	groupLag, groupLagMax                                        *prometheus.Desc
	fetchSessions, fetchSessionPartitions, fetchSessionEvictions *prometheus.Desc
}

// NewClusterCollector returns a collector of the cluster health gauges read
// from view. Most callers want Metrics.RegisterClusterView.
func NewClusterCollector(view ClusterView) prometheus.Collector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
	}
	return &clusterCollector{
		view:            view,
		partitions:      desc("partitions", "Partition replicas hosted on this broker."),
		leaders:         desc("leader_partitions", "Partitions this broker leads."),
		underReplicated: desc("under_replicated_partitions", "Partitions led by this broker whose ISR is smaller than their replica set."),
		underMinISR:     desc("under_min_isr_partitions", "Partitions led by this broker whose ISR is below min.insync.replicas (acks=all produces fail)."),
		atMinISR:        desc("at_min_isr_partitions", "Partitions led by this broker whose ISR is exactly min.insync.replicas (one more loss blocks acks=all)."),
		offline:         desc("offline_partitions", "Partitions without a live leader, reported by the active controller only."),
		openFilesLimitOffline: desc("open_files_limit_offline_replicas",
			"Replicas assigned to this broker held closed for the open-files limit (RLIMIT_NOFILE) and answering KAFKA_STORAGE_ERROR until a reconcile opens them (Kafka's OfflineReplicaCount, of this cause)."),
		activeController: desc("active_controller",
			"1 if this broker is the active controller, else 0; the sum over the cluster must be 1."),
		followerLag: desc("follower_lag_records",
			"Records a follower replica is behind this leader.", "topic", "partition", "replica"),
		followerLagMax: desc("follower_lag_max_records", "Largest lag of any follower of a partition this broker leads."),
		groupLag: desc("consumer_group_lag_records",
			"Records between a consumer group's committed offset and the partition's high watermark, reported by the group's coordinator.",
			"group", "topic", "partition"),
		groupLagMax: desc("consumer_group_lag_max_records",
			"Largest lag of a consumer group over its partitions, reported by the group's coordinator.", "group"),
		fetchSessions: desc("incremental_fetch_sessions",
			"Incremental fetch sessions (KIP-227) this broker holds (Kafka's NumIncrementalFetchSessions)."),
		fetchSessionPartitions: desc("incremental_fetch_partitions_cached",
			"Partitions over all incremental fetch sessions (Kafka's NumIncrementalFetchPartitionsCached)."),
		fetchSessionEvictions: desc("incremental_fetch_session_evictions_total",
			"Fetch sessions evicted to make room for new ones (max.incremental.fetch.session.cache.slots)."),
	}
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.partitions, c.leaders, c.underReplicated, c.underMinISR, c.atMinISR,
		c.offline, c.activeController, c.openFilesLimitOffline, c.followerLag, c.followerLagMax,
		c.groupLag, c.groupLagMax,
		c.fetchSessions, c.fetchSessionPartitions, c.fetchSessionEvictions,
	} {
		ch <- d
	}
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.view.PartitionHealth()
	active := c.view.IsActiveController()
	offline := 0
	if active {
		offline = h.Offline
	}
	gauge(ch, c.partitions, h.Partitions)
	gauge(ch, c.leaders, h.Leaders)
	gauge(ch, c.underReplicated, h.UnderReplicated)
	gauge(ch, c.underMinISR, h.UnderMinISR)
	gauge(ch, c.atMinISR, h.AtMinISR)
	gauge(ch, c.offline, offline)
	gauge(ch, c.activeController, boolToInt(active))
	gauge(ch, c.openFilesLimitOffline, h.OpenFilesLimitOffline)

	var maxLag int64
	for i, l := range c.view.FollowerLags() {
		lag := max(l.Records, 0) // a follower briefly ahead of a stale leader view is not behind
		maxLag = max(maxLag, lag)
		if i >= maxFollowerLagSeries {
			continue
		}
		gauge(ch, c.followerLag, lag, l.Topic,
			strconv.FormatInt(int64(l.Partition), 10), strconv.FormatInt(int64(l.Replica), 10))
	}
	gauge(ch, c.followerLagMax, maxLag)

	fs := c.view.FetchSessions()
	gauge(ch, c.fetchSessions, fs.Sessions)
	gauge(ch, c.fetchSessionPartitions, fs.Partitions)
	if m, err := prometheus.NewConstMetric(c.fetchSessionEvictions, prometheus.CounterValue, float64(fs.Evictions)); err == nil {
		ch <- m
	}

	groupMax := map[string]int64{}
	for i, l := range c.view.GroupLags() {
		lag := max(l.Records, 0)
		groupMax[l.Group] = max(groupMax[l.Group], lag)
		if i >= maxGroupLagSeries {
			continue
		}
		gauge(ch, c.groupLag, lag, l.Group, l.Topic, strconv.FormatInt(int64(l.Partition), 10))
	}
	for g, lag := range groupMax {
		gauge(ch, c.groupLagMax, lag, g)
	}
}

// gauge sends one gauge sample. A sample whose label value is not valid
// UTF-8 is dropped: an invalid metric would fail the whole scrape, and the
// max-lag gauge still covers it.
func gauge[N int | int64](ch chan<- prometheus.Metric, d *prometheus.Desc, v N, labels ...string) {
	if m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, float64(v), labels...); err == nil {
		ch <- m
	}
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
