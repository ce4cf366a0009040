// Package metrics holds a broker's Prometheus metrics: what operators alert
// on, named after the Kafka MBeans they already know.
//
// Every broker owns its own registry (tests run several brokers in one
// process), so nothing here touches prometheus.DefaultRegisterer. All
// *Metrics methods are safe for concurrent use and do nothing on a nil
// *Metrics, so code paths that run without metrics need no checks.
//
// Metric names and the Kafka MBean each corresponds to:
//
//	skein_under_replicated_partitions     kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions
//	skein_under_min_isr_partitions        kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount
//	skein_at_min_isr_partitions           kafka.server:type=ReplicaManager,name=AtMinIsrPartitionCount
//	skein_partitions                      kafka.server:type=ReplicaManager,name=PartitionCount
//	skein_leader_partitions               kafka.server:type=ReplicaManager,name=LeaderCount
//	skein_offline_partitions              kafka.controller:type=KafkaController,name=OfflinePartitionsCount
//	skein_active_controller               kafka.controller:type=KafkaController,name=ActiveControllerCount
//	skein_isr_shrinks_total               kafka.server:type=ReplicaManager,name=IsrShrinksPerSec
//	skein_isr_expands_total               kafka.server:type=ReplicaManager,name=IsrExpandsPerSec
//	skein_leader_elections_total          kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs
//	skein_unclean_leader_elections_total  kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec
//	skein_topic_bytes_in_total            kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=*
//	skein_topic_records_in_total          kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=*
//	skein_topic_bytes_out_total           kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic=*
//	skein_topic_records_out_total         (no Kafka equivalent: records sent to consumers)
//	skein_replication_bytes_in_total      kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec
//	skein_replication_bytes_out_total     kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesOutPerSec
//	skein_requests_total                  kafka.network:type=RequestMetrics,name=RequestsPerSec / ErrorsPerSec
//	skein_request_duration_seconds        kafka.network:type=RequestMetrics,name=TotalTimeMs,request=*
//	skein_fsync_duration_seconds          kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs
//	skein_log_page_cache_dropped_bytes_total (no Kafka equivalent: log.page.cache.window.bytes, log.page.cache.broker.bytes)
//	skein_follower_lag_records            kafka.server:type=FetcherLagMetrics,name=ConsumerLag (seen from the leader)
//	skein_follower_lag_max_records        kafka.server:type=ReplicaFetcherManager,name=MaxLag
//	skein_connections                     kafka.server:type=socket-server-metrics,name=connection-count
//
// As in Kafka, the request label splits Fetch into FetchConsumer and
// FetchFollower, and the per-partition health counts are reported by each
// partition's leader, so summing a metric over the cluster gives the
// cluster's count. Offline partitions are a cluster-wide count reported only
// by the active controller, for the same reason.
package metrics
