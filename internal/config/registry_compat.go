package config

import "math"

// compatProperties appear in Kafka's stock server.properties but mean nothing
// to Skein (Go schedules goroutines, not thread pools; Skein has no
// share-group state topic). They are accepted, type-checked
// and ignored so an operator's existing file loads unchanged.
var compatProperties = []Property{
	{
		Name: "num.network.threads", Kind: KindInt, Default: "3", Min: 1, Max: math.MaxInt32, Ignored: true,
		Doc: "Kafka's network thread pool size; Skein uses a goroutine per connection.",
	},
	{
		Name: "num.io.threads", Kind: KindInt, Default: "8", Min: 1, Max: math.MaxInt32, Ignored: true,
		Doc: "Kafka's request handler pool size; Skein bounds work with queued.max.requests.",
	},
	{
		Name: "num.recovery.threads.per.data.dir", Kind: KindInt, Default: "1", Min: 1, Max: math.MaxInt32, Ignored: true,
		Doc: "Kafka's log recovery thread pool size.",
	},
	{
		Name: "share.coordinator.state.topic.replication.factor", Kind: KindShort, Default: "3", Min: 1, Max: maxReplicationFactor, Ignored: true,
		Doc: "Replicas of Kafka's share-group state topic.",
	},
	{
		Name: "share.coordinator.state.topic.min.isr", Kind: KindShort, Default: "2", Min: 1, Max: maxReplicationFactor, Ignored: true,
		Doc: "min.insync.replicas of Kafka's share-group state topic.",
	},
}

// replacedKafkaProperties are Kafka names Skein deliberately does not
// accept, with what to use instead; they sharpen the unknown-key error.
var replacedKafkaProperties = map[string]string{
	"broker.id":                       "use node.id",
	"zookeeper.connect":               "Skein needs no ZooKeeper: set process.roles and controller.quorum.voters",
	"log.flush.scheduler.interval.ms": "set log.flush.interval.ms",
	// Accepted once but never read; refused now rather than pretending.
	"replica.high.watermark.checkpoint.interval.ms": "Skein keeps no high-watermark checkpoint file: a new leader learns the high watermark from its followers' fetches",
	"replica.fetch.backoff.ms":                      "Skein's replica fetcher retries a failed fetch after a fixed 100 ms",
	"num.replica.fetchers":                          "Skein runs one replica fetcher per source broker",
	"controller.quorum.election.timeout.ms":         "Skein's quorum elects on a fixed 0.5-1 s timeout (10 ticks of 50 ms)",
}
