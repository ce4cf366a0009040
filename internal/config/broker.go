package config

import (
	"maps"
	"net"
	"slices"
	"time"

	"github.com/skein-log/skein/internal/authz"
)

// Process roles.
const (
	RoleBroker     = "broker"
	RoleController = "controller"
)

// Broker is the typed configuration the server runs with. Field comments
// give the property each field comes from; docs/configuration.md has the
// meaning and default of each.
type Broker struct {
	NodeID    int32    // node.id, or derived as node.id.source says
	Roles     []string // process.roles
	ClusterID string   // cluster.id ("" = from disk or new)
	Rack      string   // broker.rack

	Listeners []Listener // listeners, with SecurityProtocol filled in
	// DialedListeners are the listeners a node dials without listening
	// on them, secured by their settings (Name and SecurityProtocol
	// only): a broker-only node's controller listeners, and a
	// controller-only node's BrokerDialListener.
	DialedListeners []Listener
	// AdvertisedListeners come from advertised.listeners, else the
	// non-controller listeners. Copied from listeners, Host may be empty and
	// Port 0: the node then advertises the address it actually bound.
	AdvertisedListeners     []Listener
	ControllerListenerNames []string // controller.listener.names, upper-cased
	InterBrokerListenerName string   // inter.broker.listener.name, resolved; "" on a controller-only node
	// BrokerDialListener is the brokers' listener this node dials them
	// on as an admin client would (the balancer's DescribeLogDirs and
	// AlterReplicaLogDirs): InterBrokerListenerName on a broker; on a
	// controller-only node inter.broker.listener.name if set, else "".
	BrokerDialListener string
	// ControllerQuorumVoters from controller.quorum.voters, or this node
	// alone at its controller listener when that is empty.
	ControllerQuorumVoters []Voter
	// ControllerQuorumBootstrapServers (controller.quorum.bootstrap.servers)
	// makes the quorum dynamic; ControllerQuorumVoters is then empty.
	ControllerQuorumBootstrapServers []string
	// ControllerQuorumStandalone: controller.quorum.standalone.
	ControllerQuorumStandalone bool
	AdminListeners             []AdminListener // admin.listeners (empty = off)
	AdminPprof                 bool            // admin.pprof.enable
	// OutboundBindAddress is the local IP of connections to other nodes
	// (outbound.bind.address); nil lets the OS choose.
	OutboundBindAddress net.IP

	MaxConnections               int            // max.connections
	QuotaWindowNum               int            // quota.window.num
	QuotaWindowSizeSeconds       int            // quota.window.size.seconds
	MaxConnectionsPerIP          int            // max.connections.per.ip
	MaxConnectionsPerIPOverrides map[string]int // max.connections.per.ip.overrides, by IP in net.IP.String form
	MaxConnectionCreationRate    int            // max.connection.creation.rate (per second)
	// ListenerMaxConnections and ListenerConnectionCreationRate come from
	// listener.name.NAME.max.connections and
	// listener.name.NAME.max.connection.creation.rate, by upper-case name.
	ListenerMaxConnections         map[string]int
	ListenerConnectionCreationRate map[string]int
	SocketRequestMaxBytes          int32         // socket.request.max.bytes
	QueuedMaxRequests              int           // queued.max.requests
	QueuedMaxRequestBytes          int64         // queued.max.request.bytes (-1 = no limit)
	FetchResponseMaxInflightBytes  int64         // fetch.response.max.inflight.bytes
	SocketSendBufferBytes          int           // socket.send.buffer.bytes (-1 = OS default)
	SocketReceiveBufferBytes       int           // socket.receive.buffer.bytes (-1 = OS default)
	ConnectionsMaxIdle             time.Duration // connections.max.idle.ms
	SocketRequestReadTimeout       time.Duration // socket.request.read.timeout.ms
	// ListenerTLS holds each SSL listener's TLS settings, by upper-case
	// name (see TLSOf).
	ListenerTLS      map[string]ListenerTLS
	HandshakeTimeout time.Duration // ssl.handshake.timeout.ms
	// ListenerSASL holds each SASL listener's mechanisms and users, by
	// upper-case name (see SASLOf).
	ListenerSASL map[string]ListenerSASL
	// InterBrokerSASLMechanism is sasl.mechanism.inter.broker.protocol.
	InterBrokerSASLMechanism  string
	FailedAuthenticationDelay time.Duration // connection.failed.authentication.delay.ms
	// OAuthBearer is the OAUTHBEARER token validation; nil unless
	// sasl.enabled.mechanisms lists OAUTHBEARER.
	OAuthBearer *OAuthBearer

	LogDirs                    []string      // log.dirs, else [log.dir]
	LogDirMinFreeBytes         int64         // log.dir.min.free.bytes
	LogOpenFilesPerReplica     int           // log.open.files.per.replica
	LogDirMinFreePercent       float64       // log.dir.min.free.percent
	LogFsyncIoUring            bool          // log.fsync.io.uring.enable
	LogRetentionCheckInterval  time.Duration // log.retention.check.interval.ms
	LogCleanerEnable           bool          // log.cleaner.enable
	LogCleanerBackoff          time.Duration // log.cleaner.backoff.ms
	LogCleanerDedupeBufferSize int64         // log.cleaner.dedupe.buffer.size
	LogPageCacheWindowBytes    int64         // log.page.cache.window.bytes
	LogPageCacheBrokerBytes    int64         // log.page.cache.broker.bytes

	NumPartitions            int32 // num.partitions
	DefaultReplicationFactor int16 // default.replication.factor
	MinInsyncReplicas        int32 // min.insync.replicas (also TopicDefaults.MinInsyncReplicas)
	AutoCreateTopicsEnable   bool  // auto.create.topics.enable
	DeleteTopicEnable        bool  // delete.topic.enable

	// Authorizer is SkeinAuthorizer when authorizer.class.name names it or
	// one of Kafka's aliases, "" when requests are not authorized.
	Authorizer   string
	SuperUsers   map[authz.Principal]bool // super.users
	AllowIfNoACL bool                     // allow.everyone.if.no.acl.found

	ReplicaLagTimeMax            time.Duration // replica.lag.time.max.ms
	ReplicaFetchMaxBytes         int32         // replica.fetch.max.bytes
	ReplicaFetchResponseMaxBytes int32         // replica.fetch.response.max.bytes
	ReplicaFetchMinBytes         int32         // replica.fetch.min.bytes
	ReplicaFetchWaitMax          time.Duration // replica.fetch.wait.max.ms
	FetchSessionCacheSlots       int           // max.incremental.fetch.session.cache.slots
	// Replication throttles in bytes per second (KIP-73), static here:
	// Skein has no dynamic broker configuration yet.
	LeaderReplicationThrottledRate   int64 // leader.replication.throttled.rate
	FollowerReplicationThrottledRate int64 // follower.replication.throttled.rate
	// AlterLogDirsRate is replica.alter.log.dirs.io.max.bytes.per.second.
	AlterLogDirsRate int64

	BrokerSessionTimeout         time.Duration // broker.session.timeout.ms
	BrokerHeartbeatInterval      time.Duration // broker.heartbeat.interval.ms
	AutoLeaderRebalanceEnable    bool          // auto.leader.rebalance.enable
	LeaderImbalanceCheckInterval time.Duration // leader.imbalance.check.interval.seconds

	AutoReplicaBalanceEnable         bool          // auto.replica.balance.enable
	ReplicaBalanceCheckInterval      time.Duration // replica.balance.check.interval.ms
	ReplicaBalanceMaxConcurrentMoves int           // replica.balance.max.concurrent.moves
	ReplicaBalanceUnavailableTimeout time.Duration // replica.balance.broker.unavailable.timeout.ms
	ReplicaImbalancePerBrokerPercent int           // replica.imbalance.per.broker.percentage
	ReplicaBalanceDiskImbalancePct   int           // replica.balance.disk.imbalance.percentage
	ReplicaBalanceDiskMinBytes       int64         // replica.balance.disk.imbalance.min.bytes
	ReplicaBalanceMaxDiskUsagePct    int           // replica.balance.max.disk.usage.percent
	ReplicaBalanceLogDirsEnable      bool          // replica.balance.log.dirs.enable

	OffsetsTopicReplicationFactor int16         // offsets.topic.replication.factor
	OffsetsTopicNumPartitions     int32         // offsets.topic.num.partitions
	OffsetsTopicSegmentBytes      int32         // offsets.topic.segment.bytes
	OffsetsRetention              time.Duration // offsets.retention.minutes
	OffsetsRetentionCheckInterval time.Duration // offsets.retention.check.interval.ms
	OffsetMetadataMaxBytes        int32         // offset.metadata.max.bytes
	GroupInitialRebalanceDelay    time.Duration // group.initial.rebalance.delay.ms
	GroupMinSessionTimeout        time.Duration // group.min.session.timeout.ms
	GroupMaxSessionTimeout        time.Duration // group.max.session.timeout.ms
	GroupMaxSize                  int32         // group.max.size

	TransactionStateLogReplicationFactor int16         // transaction.state.log.replication.factor
	TransactionStateLogNumPartitions     int32         // transaction.state.log.num.partitions
	TransactionStateLogMinISR            int32         // transaction.state.log.min.isr
	TransactionStateLogSegmentBytes      int32         // transaction.state.log.segment.bytes
	TransactionMaxTimeout                time.Duration // transaction.max.timeout.ms
	TransactionalIDExpiration            time.Duration // transactional.id.expiration.ms
	TransactionPartitionVerification     bool          // transaction.partition.verification.enable
	AddPartitionsToTxnRetryBackoff       time.Duration // add.partitions.to.txn.retry.backoff.ms
	AddPartitionsToTxnRetryBackoffMax    time.Duration // add.partitions.to.txn.retry.backoff.max.ms
	TransactionAbortCheckInterval        time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms
	TransactionExpireCheckInterval       time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms

	ProducerIDExpiration time.Duration // producer.id.expiration.ms

	LogFormat string // log.format: text or json
	LogLevel  string // log.level: debug, info, warn or error

	// TopicDefaults is what a topic without overrides gets: the broker
	// synonyms (log.retention.ms and friends) resolved.
	TopicDefaults TopicConfig

	// Raw holds every property set explicitly (file, environment, flags),
	// by broker name, for DescribeConfigs. Do not modify.
	Raw map[string]string

	origins map[string]string
}

// HasRole reports whether process.roles includes role.
func (b *Broker) HasRole(role string) bool { return slices.Contains(b.Roles, role) }

// ListenerByName returns the listener with that (case-insensitive) name.
func (b *Broker) ListenerByName(name string) (Listener, bool) {
	return findListener(b.Listeners, name)
}

// securedListeners are the listeners whose security settings this node
// resolves: its own, and those it only dials (DialedListeners).
func (b *Broker) securedListeners() []Listener {
	return append(slices.Clone(b.Listeners), b.DialedListeners...)
}

// ControllerListener is the listener controller traffic arrives on; false
// on a broker-only node.
func (b *Broker) ControllerListener() (Listener, bool) {
	if !b.HasRole(RoleController) || len(b.ControllerListenerNames) == 0 {
		return Listener{}, false
	}
	return findListener(b.Listeners, b.ControllerListenerNames[0])
}

// Origin says where an explicitly set property came from ("" if default).
func (b *Broker) Origin(name string) string { return b.origins[name] }

// build validates every explicit value, reads the typed fields and checks
// the rules that span several properties.
func (s *settings) build() (*Broker, error) {
	reg := theRegistry()
	for _, key := range slices.Sorted(maps.Keys(s.values)) {
		value := s.values[key]
		if reason, ok := reg.byName[key].Validate(value); !ok {
			return nil, &Error{Key: key, Value: value, Reason: reason, Origin: s.origins[key]}
		}
	}
	if err := s.deriveNodeID(); err != nil {
		return nil, err
	}

	r := &reader{values: s.values}
	b := &Broker{
		NodeID:    r.int32("node.id"),
		Roles:     r.list("process.roles"),
		ClusterID: r.text("cluster.id"),
		Rack:      r.text("broker.rack"),

		MaxConnections:                r.int("max.connections"),
		QuotaWindowNum:                r.int("quota.window.num"),
		QuotaWindowSizeSeconds:        r.int("quota.window.size.seconds"),
		MaxConnectionsPerIP:           r.int("max.connections.per.ip"),
		MaxConnectionCreationRate:     r.int("max.connection.creation.rate"),
		SocketRequestMaxBytes:         r.int32("socket.request.max.bytes"),
		QueuedMaxRequests:             r.int("queued.max.requests"),
		QueuedMaxRequestBytes:         r.int64("queued.max.request.bytes"),
		FetchResponseMaxInflightBytes: r.int64("fetch.response.max.inflight.bytes"),
		SocketRequestReadTimeout:      r.durationMs("socket.request.read.timeout.ms"),
		SocketSendBufferBytes:         r.int("socket.send.buffer.bytes"),
		SocketReceiveBufferBytes:      r.int("socket.receive.buffer.bytes"),
		ConnectionsMaxIdle:            r.durationMs("connections.max.idle.ms"),

		LogRetentionCheckInterval:  r.durationMs("log.retention.check.interval.ms"),
		LogCleanerEnable:           r.bool("log.cleaner.enable"),
		LogCleanerBackoff:          r.durationMs("log.cleaner.backoff.ms"),
		LogCleanerDedupeBufferSize: r.int64("log.cleaner.dedupe.buffer.size"),
		LogOpenFilesPerReplica:     r.int("log.open.files.per.replica"),
		LogDirMinFreeBytes:         r.int64("log.dir.min.free.bytes"),
		LogDirMinFreePercent:       r.float64("log.dir.min.free.percent"),
		LogPageCacheWindowBytes:    r.int64("log.page.cache.window.bytes"),
		LogPageCacheBrokerBytes:    r.int64("log.page.cache.broker.bytes"),
		LogFsyncIoUring:            r.bool("log.fsync.io.uring.enable"),

		NumPartitions:            r.int32("num.partitions"),
		DefaultReplicationFactor: r.int16("default.replication.factor"),
		MinInsyncReplicas:        r.int32("min.insync.replicas"),
		AutoCreateTopicsEnable:   r.bool("auto.create.topics.enable"),
		AdminPprof:               r.bool("admin.pprof.enable"),
		DeleteTopicEnable:        r.bool("delete.topic.enable"),

		Authorizer:   authorizerClass(r.text("authorizer.class.name")),
		AllowIfNoACL: r.bool("allow.everyone.if.no.acl.found"),

		ReplicaLagTimeMax:                r.durationMs("replica.lag.time.max.ms"),
		ReplicaFetchMaxBytes:             r.int32("replica.fetch.max.bytes"),
		ReplicaFetchResponseMaxBytes:     r.int32("replica.fetch.response.max.bytes"),
		ReplicaFetchMinBytes:             r.int32("replica.fetch.min.bytes"),
		ReplicaFetchWaitMax:              r.durationMs("replica.fetch.wait.max.ms"),
		FetchSessionCacheSlots:           r.int("max.incremental.fetch.session.cache.slots"),
		LeaderReplicationThrottledRate:   r.int64("leader.replication.throttled.rate"),
		FollowerReplicationThrottledRate: r.int64("follower.replication.throttled.rate"),
		AlterLogDirsRate:                 r.int64("replica.alter.log.dirs.io.max.bytes.per.second"),

		BrokerSessionTimeout:             r.durationMs("broker.session.timeout.ms"),
		BrokerHeartbeatInterval:          r.durationMs("broker.heartbeat.interval.ms"),
		AutoLeaderRebalanceEnable:        r.bool("auto.leader.rebalance.enable"),
		LeaderImbalanceCheckInterval:     r.durationUnits("leader.imbalance.check.interval.seconds", time.Second),
		AutoReplicaBalanceEnable:         r.bool("auto.replica.balance.enable"),
		ReplicaBalanceCheckInterval:      r.durationMs("replica.balance.check.interval.ms"),
		ReplicaBalanceMaxConcurrentMoves: r.int("replica.balance.max.concurrent.moves"),
		ReplicaBalanceUnavailableTimeout: r.durationMs("replica.balance.broker.unavailable.timeout.ms"),
		ReplicaImbalancePerBrokerPercent: r.int("replica.imbalance.per.broker.percentage"),
		ReplicaBalanceDiskImbalancePct:   r.int("replica.balance.disk.imbalance.percentage"),
		ReplicaBalanceDiskMinBytes:       r.int64("replica.balance.disk.imbalance.min.bytes"),
		ReplicaBalanceMaxDiskUsagePct:    r.int("replica.balance.max.disk.usage.percent"),
		ReplicaBalanceLogDirsEnable:      r.bool("replica.balance.log.dirs.enable"),

		OffsetsTopicReplicationFactor: r.int16("offsets.topic.replication.factor"),
		OffsetsTopicNumPartitions:     r.int32("offsets.topic.num.partitions"),
		OffsetsTopicSegmentBytes:      r.int32("offsets.topic.segment.bytes"),
		OffsetsRetention:              r.durationUnits("offsets.retention.minutes", time.Minute),
		OffsetsRetentionCheckInterval: r.durationMs("offsets.retention.check.interval.ms"),
		OffsetMetadataMaxBytes:        r.int32("offset.metadata.max.bytes"),
		GroupInitialRebalanceDelay:    r.durationMs("group.initial.rebalance.delay.ms"),
		GroupMinSessionTimeout:        r.durationMs("group.min.session.timeout.ms"),
		GroupMaxSessionTimeout:        r.durationMs("group.max.session.timeout.ms"),
		GroupMaxSize:                  r.int32("group.max.size"),

		TransactionStateLogReplicationFactor: r.int16("transaction.state.log.replication.factor"),
		TransactionStateLogNumPartitions:     r.int32("transaction.state.log.num.partitions"),
		TransactionStateLogMinISR:            r.int32("transaction.state.log.min.isr"),
		TransactionStateLogSegmentBytes:      r.int32("transaction.state.log.segment.bytes"),
		TransactionMaxTimeout:                r.durationMs("transaction.max.timeout.ms"),
		TransactionPartitionVerification:     r.bool("transaction.partition.verification.enable"),
		AddPartitionsToTxnRetryBackoff:       r.durationMs("add.partitions.to.txn.retry.backoff.ms"),
		AddPartitionsToTxnRetryBackoffMax:    r.durationMs("add.partitions.to.txn.retry.backoff.max.ms"),
		TransactionalIDExpiration:            r.durationMs("transactional.id.expiration.ms"),
		TransactionAbortCheckInterval:        r.durationMs("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		TransactionExpireCheckInterval:       r.durationMs("transaction.remove.expired.transaction.cleanup.interval.ms"),

		ProducerIDExpiration: r.durationMs("producer.id.expiration.ms"),

		LogFormat: r.text("log.format"),
		LogLevel:  r.text("log.level"),

		Raw:     maps.Clone(s.values),
		origins: maps.Clone(s.origins),
	}
	b.LogDirs = r.list("log.dirs")
	if len(b.LogDirs) == 0 {
		b.LogDirs = []string{r.text("log.dir")}
	}
	if r.err != nil {
		return nil, r.err
	}
	b.SuperUsers, _ = authz.ParseSuperUsers(r.text("super.users")) // checked by the property
	if err := b.resolveNetwork(r); err != nil {
		return nil, err
	}
	if err := b.checkTimings(r); err != nil {
		return nil, err
	}
	if err := b.resolveConnectionLimits(r, s.listenerValues); err != nil {
		return nil, err
	}
	if err := b.resolveTLS(r, s.listenerValues); err != nil {
		return nil, err
	}
	if err := b.resolveSASL(r, s.listenerValues); err != nil {
		return nil, err
	}
	b.InterBrokerSASLMechanism = r.text("sasl.mechanism.inter.broker.protocol")
	if err := b.checkClusterListeners(r); err != nil {
		return nil, err
	}
	defaults, err := ResolveTopic(b, nil)
	if err != nil {
		return nil, err
	}
	b.TopicDefaults = defaults
	return b, nil
}
