package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/skein-log/skein/internal/authz"
)

// maxDurationMs is the largest millisecond count a time.Duration can hold.
const maxDurationMs = math.MaxInt64 / int64(time.Millisecond)

// Generous ceilings that still catch typos and keep allocations bounded.
const (
	maxReplicationFactor  = 128
	maxPartitionsPerTopic = 100_000
)

// brokerProperties are read by the broker itself (not per topic).
var brokerProperties = []Property{
	// Identity and roles.
	{
		Name: "node.id", Kind: KindInt, Default: "1", Min: 0, Max: math.MaxInt32,
		Doc: "Id of this node, unique in the cluster; it is both its broker id and its controller voter id.",
	},
	{
		Name: "node.id.source", Kind: KindEnum, Default: NodeIDSourceConfig,
		Values: []string{NodeIDSourceConfig, NodeIDSourceHostnameOrdinal},
		Doc: "Skein extension: where node.id comes from. config: the node.id property. " +
			"hostname-ordinal: a host name ending in -N gives node.id N+1, so StatefulSet pod skein-0 is node 1; node.id must then be unset.",
	},
	{
		Name: "process.roles", Kind: KindList, Default: "broker,controller",
		Values: []string{"broker", "controller"}, NonEmpty: true,
		Doc: "Roles of this node: broker (hosts partitions, serves clients), controller (votes in the metadata quorum), or both. " +
			"A controller-only node listens on controller listeners only and is never a broker; a broker-only node follows the metadata log from the controllers without voting.",
	},
	{
		Name: "cluster.id", Kind: KindString, format: "up to 64 letters, digits, '-' or '_'", check: checkClusterID,
		Doc: "Cluster id every node must share. Empty: the one stored in the data directory, or a new one on first start.",
	},
	{
		Name: "broker.rack", Kind: KindString, format: "text of at most 255 bytes", check: checkMaxLen(255),
		Doc: "Rack (or zone) of this broker; replica placement spreads each partition over racks.",
	},

	// Network.
	{
		Name: "listeners", Kind: KindList, Default: "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
		format: "NAME://host:port", check: checkBy(ParseListeners),
		Doc: "Addresses to listen on. An empty host binds every interface; port 0 picks a free port.",
	},
	{
		Name: "advertised.listeners", Kind: KindList,
		format: "NAME://host:port", check: checkBy(ParseListeners),
		Doc: "Addresses given to clients and other brokers, by listener name. Empty: the broker entries of listeners.",
	},
	{
		Name: "listener.security.protocol.map", Kind: KindList,
		Default: "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
		format:  "LISTENER:PROTOCOL", check: checkBy(ParseProtocolMap),
		Doc: "Security protocol of each listener name. Skein serves PLAINTEXT and SSL (TLS, configured by the ssl.* properties); SASL_PLAINTEXT and SASL_SSL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) on client listeners; controller and inter-broker listeners may use any of them (docs/security.md).",
	},
	{
		Name: "controller.listener.names", Kind: KindList, Default: "CONTROLLER",
		format: "listener names", check: checkListenerNames,
		Doc: "Listeners that carry controller (Raft) traffic; the first one is used to reach the quorum.",
	},
	{
		Name: "inter.broker.listener.name", Kind: KindString,
		format: "a listener name", check: checkOptionalListenerName,
		Doc: "Listener brokers use to replicate from each other and to forward requests. Empty: the listener named after security.inter.broker.protocol when that is set, else the first listener that is not a controller listener. An SSL one needs ssl.client.auth=required and the brokers' certificate principals in super.users; a SASL one a JAAS username and password to log in with, that user in super.users. On a controller-only node (optional): the brokers' listener the controller dials them on for the automatic balancer's DescribeLogDirs and AlterReplicaLogDirs, secured by its listener.security.protocol.map entry and listener.name.NAME.* settings; unset, the balancer there weighs replica counts only.",
	},
	{
		Name: "security.inter.broker.protocol", Kind: KindString,
		format: "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", check: checkOptionalProtocol,
		Doc: "Kafka's older way to choose the inter-broker listener: the listener named after this protocol (SSL names the SSL listener). Set it or inter.broker.listener.name, not both.",
	},
	{
		Name: "controller.quorum.voters", Kind: KindList,
		format: "id@host:port", check: checkBy(ParseVoters),
		Doc: "The metadata quorum, the same on every node, fixed (a static quorum). Empty: this node alone (needs the controller role), unless controller.quorum.bootstrap.servers is set.",
	},
	{
		Name: "controller.quorum.bootstrap.servers", Kind: KindList,
		format: "host:port", check: checkBy(ParseBootstrapServers),
		Doc: "A dynamic metadata quorum (KIP-853): controller endpoints to find the quorum through, instead of controller.quorum.voters (set one of the two). " +
			"The voters are then the quorum's own state, changed with AddRaftVoter and RemoveRaftVoter (skein cluster quorum add-controller / remove-controller). " +
			"A controller with an empty metadata directory waits to be added, unless controller.quorum.standalone founds the quorum.",
	},
	{
		Name: "controller.quorum.standalone", Kind: KindBool, Default: "false",
		Doc: "Skein extension (Kafka: kafka-storage format --standalone): with controller.quorum.bootstrap.servers, a controller whose metadata directory is empty founds the quorum as its only voter. " +
			"Read only when the directory is new: the quorum's membership lives in its log afterwards.",
	},
	{
		Name: "admin.listeners", Kind: KindList,
		format: "http://host:port", check: checkBy(ParseAdminListeners),
		Doc: "Skein extension: HTTP addresses serving /metrics and health checks. Empty: off.",
	},
	{
		Name: "admin.pprof.enable", Kind: KindBool, Default: "false",
		Doc: "Skein extension: also serve Go's runtime profiles (CPU, heap, goroutines, trace) under /debug/pprof/ on admin.listeners. " +
			"Off by default: profiles show internals and cost CPU while taken. A CPU profile or trace must ask for under 30 seconds (?seconds=20), the listener's write timeout.",
	},
	{
		Name: "outbound.bind.address", Kind: KindString,
		format: "an IP address of this host", check: checkOptionalIP,
		Doc: "Skein extension: local address this node's connections to other nodes (replication, controller, quorum) start from. Empty: the OS chooses. The chaos suite gives each node its own loopback address so its fault proxies can tell the nodes apart.",
	},
	{
		Name: "quota.window.num", Kind: KindInt, Default: "11", Min: 1, Max: 1000,
		Doc: "Number of samples over which client quota rates (producer_byte_rate, consumer_byte_rate, request_percentage) are measured.",
	},
	{
		Name: "quota.window.size.seconds", Kind: KindInt, Default: "1", Min: 1, Max: 3600,
		Doc: "Length of one client quota sample; a throttle lasts at most one sample.",
	},
	{
		Name: "max.connections", Kind: KindInt, Default: "1000", Min: 1, Max: 1_000_000,
		Doc: "Most connections accepted at once over all listeners; more are closed on accept. " +
			"Per listener: listener.name.NAME.max.connections. As in Kafka, the controller listeners and a dedicated inter-broker listener are not held to the broker-wide limit " +
			"(only to their own listener limit), so clients can never lock out replication or the quorum. An inter-broker listener that is also the only client listener is held to it; " +
			"there max.connections.per.ip keeps one address from taking every connection.",
	},
	{
		Name: "max.connections.per.ip", Kind: KindInt, Default: "2147483647", Min: 0, Max: math.MaxInt32,
		Doc: "Most connections accepted at once from one IP address, on every listener but the controller listeners; more are closed on accept.",
	},
	{
		Name: "max.connections.per.ip.overrides", Kind: KindList,
		format: "ip:count", check: checkBy(ParseConnectionOverrides),
		Doc: "Per-address exceptions to max.connections.per.ip, as a comma-separated list of ip:count (IPv6 as [ip]:count). " +
			"Unlike Kafka, only IP addresses are accepted: host names are not resolved.",
	},
	{
		Name: "max.connection.creation.rate", Kind: KindInt, Default: "2147483647", Min: 0, Max: math.MaxInt32,
		Doc: "Most new connections per second accepted over all listeners but the controller listeners and a dedicated inter-broker listener (KIP-612); " +
			"faster ones wait in the accept queue. Per listener: listener.name.NAME.max.connection.creation.rate.",
	},
	{
		Name: "socket.request.max.bytes", Kind: KindInt, Default: "104857600", Min: 1, Max: math.MaxInt32,
		Doc: "Largest request frame accepted; a bigger size prefix closes the connection.",
	},
	{
		Name: "queued.max.requests", Kind: KindInt, Default: "500", Min: 1, Max: 1_000_000,
		Doc: "Requests read and not yet taken up by their handler, over all connections, before connections stop reading (a parked long poll or produce waiting for acks no longer counts).",
	},
	{
		Name: "queued.max.request.bytes", Kind: KindLong, Default: "268435456", Min: -1, Max: math.MaxInt64,
		Doc: "Bytes of request frames being read and handled at once over all connections, counted as a frame's buffer grows with the bytes that arrived; " +
			"a connection whose frame does not fit stops reading until it does, or is closed at socket.request.read.timeout.ms. " +
			"-1: no limit; otherwise at least socket.request.max.bytes. Kafka's default is -1; Skein bounds it by default.",
	},
	{
		Name: "fetch.response.max.inflight.bytes", Kind: KindLong, Default: "268435456", Min: 1 << 20, Max: math.MaxInt64,
		Doc: "Skein extension: bytes of fetch responses read but not yet written to their sockets, over all connections. " +
			"A fetch arriving when the budget is spent gets less (at least one batch), so clients that do not read their answers cannot exhaust memory.",
	},
	{
		Name: "socket.send.buffer.bytes", Kind: KindInt, Default: "102400", Min: -1, Max: math.MaxInt32,
		Doc: "SO_SNDBUF of accepted sockets; -1 keeps the OS default.",
	},
	{
		Name: "socket.receive.buffer.bytes", Kind: KindInt, Default: "102400", Min: -1, Max: math.MaxInt32,
		Doc: "SO_RCVBUF of accepted sockets; -1 keeps the OS default.",
	},
	{
		Name: "connections.max.idle.ms", Kind: KindDurationMs, Default: "600000", Min: 1, Max: maxDurationMs,
		Doc: "Close a connection that has sent no request and has no answer pending for this long.",
	},
	{
		Name: "socket.request.read.timeout.ms", Kind: KindDurationMs, Default: "30000", Min: 1, Max: maxDurationMs,
		Doc: "Skein extension: a request frame whose first byte has arrived must arrive whole within this long, else the connection is closed.",
	},

	// Storage.
	{
		Name: "log.dirs", Kind: KindList, format: "directories", check: checkDirs,
		Doc: "Directories holding partition data. Empty: log.dir.",
	},
	{
		Name: "log.dir", Kind: KindString, Default: "/tmp/skein-logs", format: "a directory", check: checkDir,
		Doc: "Data directory, used when log.dirs is empty.",
	},
	{
		Name: "log.open.files.per.replica", Kind: KindInt, Default: "1", Min: 0, Max: 1000,
		Doc: "Skein extension (Redpanda's topic_fds_per_partition): file descriptors counted for each replica this broker holds. " +
			"A broker keeps every replica's segment files open, so at registration it tells the controller how many replicas it can keep open: " +
			"its open-files limit (RLIMIT_NOFILE, the soft one) less the descriptors it keeps free for everything else (a tenth of the limit, at least 256, at most 2,048) " +
			"and those it holds besides its replicas' files, over this. The controller refuses a CreateTopics or CreatePartitions (INVALID_PARTITIONS), or a reassignment (INVALID_REPLICA_ASSIGNMENT), " +
			"that would place more replicas on the broker, naming it and the limit; raise the limit (ulimit -n; LimitNOFILE= in a systemd unit) and restart the broker to hold more. " +
			"The automatic balancer (auto.replica.balance.enable) moves no replica onto a broker past it, and moves replicas off a broker holding more (one restarted with a lower limit) first. " +
			"Replicas with several segments hold more than one file each: raise this to leave room for them. 0: the broker states no limit and the controller places replicas on it regardless.",
	},
	{
		Name: "log.dir.min.free.bytes", Kind: KindLong, Default: "67108864", Min: 0, Max: math.MaxInt64,
		Doc: "Refuse produces (KAFKA_STORAGE_ERROR, which clients retry) while a log directory's filesystem has less free space than this; reads, groups and the quorum keep serving, and produces resume once space returns. 0: no floor in bytes.",
	},
	{
		Name: "log.dir.min.free.percent", Kind: KindDouble, Default: "0", Min: 0, Max: 100,
		Doc: "As log.dir.min.free.bytes, as a percentage of the filesystem's size; the larger of the two floors applies.",
	},
	{
		Name: "log.page.cache.window.bytes", Kind: KindLong, Default: "67108864", Min: 0, Max: 1 << 40,
		Doc: "Skein-specific (Kafka has none): how many bytes of each partition replica's newest durable data the broker keeps in the operating system's page cache. " +
			"After an fsync, data older than that is advised out (posix_fadvise POSIX_FADV_DONTNEED), in steps of a quarter of this (at least 1 MiB), and a rolled segment wholly outside it at once, " +
			"so a producing broker's page cache stays bounded and the kernel reuses the freed pages for new writes instead of taking fresh ones (on a VM that hands free pages back to its host, such as Firecracker with free page reporting, each fresh page is a fault to the host inside the write). " +
			"Only data an fsync made durable is advised out: the data of a topic with write.caching=true, which the broker does not fsync, is left to the kernel until an fsync covers it (flush.messages, flush.ms, a clean stop). " +
			"The trade-off: a consumer (or a follower) reading further back than this reads from the disk instead of memory; the records are the same. " +
			"Raise it for consumers that lag by more, or set 0 to leave the page cache to the kernel. Read when a replica is opened.",
	},
	{
		Name: "log.page.cache.broker.bytes", Kind: KindLong, Default: "536870912", Min: 0, Max: 1 << 50,
		Doc: "Skein-specific (Kafka has none): how many bytes of durable partition data the broker keeps in the operating system's page cache over all its partition replicas together, on top of each one's log.page.cache.window.bytes. " +
			"When the replicas' windows together hold more, the broker advises out (posix_fadvise POSIX_FADV_DONTNEED) the cached data of the replicas written least recently first, whole, and of the next one the part needed, until they hold a quarter less than this; the replica written last gives up data only when the others cannot make room. " +
			"Without it every partition the broker wrote keeps its newest window cached once it goes idle, so the page cache grows with each new topic and new writes take fresh pages (on a VM that hands free pages back to its host, each a fault to the host inside the write). " +
			"The trade-off: a consumer reading an idle partition reads from the disk instead of memory; the records are the same. " +
			"The default holds the default windows of six busy partitions (say two topics of 3 partitions, RF=3, on every broker) with their steps. " +
			"0 means no broker-wide bound (each replica's window still applies); with log.page.cache.window.bytes=0 neither applies. Read at startup.",
	},
	{
		Name: "log.fsync.io.uring.enable", Kind: KindBool, Default: "true",
		Doc: "Skein-specific: submit the log's fdatasync calls through an io_uring (Linux), so that a goroutine waiting for the disk parks instead of holding a thread and a processor in the system call. Where the kernel refuses io_uring (too old, a seccomp filter as Docker's default one, kernel.io_uring_disabled) the broker logs it at startup and calls fdatasync directly, as it does with this off. The data is as durable either way.",
	},
	{
		Name: "log.cleaner.enable", Kind: KindBool, Default: "true",
		Doc: "Run the log cleaner, which compacts the partitions of topics with cleanup.policy=compact (including __consumer_offsets).",
	},
	{
		Name: "log.cleaner.backoff.ms", Kind: KindDurationMs, Default: "15000", Min: 1, Max: maxDurationMs,
		Doc: "How often the log cleaner looks for partitions due for compaction.",
	},
	{
		Name: "log.cleaner.dedupe.buffer.size", Kind: KindLong, Default: "134217728", Min: 1 << 20, Max: 1 << 40,
		Doc: "Memory for the log cleaner's key map (24 bytes per distinct key); a pass compacts as many dirty segments as it holds.",
	},
	{
		Name: "log.retention.check.interval.ms", Kind: KindDurationMs, Default: "300000", Min: 1, Max: maxDurationMs,
		Doc: "How often segments are checked against retention.ms and retention.bytes.",
	},

	// Topics.
	{
		Name: "num.partitions", Kind: KindInt, Default: "1", Min: 1, Max: maxPartitionsPerTopic,
		Doc: "Partitions of an auto-created topic, or of a created topic that does not say.",
	},
	{
		Name: "default.replication.factor", Kind: KindShort, Default: "1", Min: 1, Max: maxReplicationFactor,
		Doc: "Replicas of an auto-created topic, or of a created topic that does not say.",
	},
	{
		Name: "auto.create.topics.enable", Kind: KindBool, Default: "true",
		Doc: "Create a topic when a client asks for metadata about it (and allows auto-creation).",
	},
	{
		Name: "delete.topic.enable", Kind: KindBool, Default: "true",
		Doc: "Allow DeleteTopics; false answers it with TOPIC_DELETION_DISABLED.",
	},

	// Authorization.
	{
		Name: "authorizer.class.name", Kind: KindString, format: "empty or an authorizer class name", check: checkAuthorizerClass,
		Doc: "Authorizer of every request. Empty: none, every principal may do everything (as Kafka). " +
			SkeinAuthorizer + " is Skein's ACL authorizer, with Kafka's StandardAuthorizer semantics; Kafka's class names " +
			"org.apache.kafka.metadata.authorizer.StandardAuthorizer and kafka.security.authorizer.AclAuthorizer are accepted as its aliases. Any other class is refused.",
	},
	{
		Name: "super.users", Kind: KindString, format: "principals separated by ';' (User:admin;User:ops)", check: checkBy(authz.ParseSuperUsers),
		Doc: "Principals every authorization check allows, whatever the ACLs say.",
	},
	{
		Name: "allow.everyone.if.no.acl.found", Kind: KindBool, Default: "false",
		Doc: "With an authorizer, allow an operation on a resource that no ACL names at all. False (Kafka's default): such resources are denied to all but super users.",
	},

	// Replication.
	{
		Name: "replica.lag.time.max.ms", Kind: KindDurationMs, Default: "30000", Min: 1, Max: maxDurationMs,
		Doc: "A follower that has not caught up to the leader's log end for this long leaves the ISR.",
	},
	{
		Name: "replica.fetch.max.bytes", Kind: KindInt, Default: "1048576", Min: 0, Max: math.MaxInt32,
		Doc: "Bytes a follower asks for per partition in one fetch (at least one batch is always returned).",
	},
	{
		Name: "leader.replication.throttled.rate", Kind: KindLong, Default: "9223372036854775807", Min: 0, Max: math.MaxInt64,
		Update: UpdateClusterWide,
		Doc:    "Bytes per second this broker, as leader, sends to followers of the replicas its topics' leader.replication.throttled.replicas name (while they are out of the ISR); 0 or the default means no throttle. Dynamic (KIP-73): set per broker or as the cluster default with IncrementalAlterConfigs (skein configs, kafka-configs --entity-type brokers) and applied at once; server.properties gives the value when neither is set (KIP-1051).",
	},
	{
		Name: "follower.replication.throttled.rate", Kind: KindLong, Default: "9223372036854775807", Min: 0, Max: math.MaxInt64,
		Update: UpdateClusterWide,
		Doc:    "Bytes per second this broker, as follower, fetches for the replicas its topics' follower.replication.throttled.replicas name (while they are out of the ISR); 0 or the default means no throttle. Dynamic like leader.replication.throttled.rate.",
	},
	{
		Name: "replica.alter.log.dirs.io.max.bytes.per.second", Kind: KindLong, Default: "9223372036854775807", Min: 0, Max: math.MaxInt64,
		Update: UpdateClusterWide,
		Doc:    "Bytes per second all moves of replicas between this broker's log directories (AlterReplicaLogDirs, KIP-113) copy together; 0 or the default means no throttle. The last stretch a move copies with the partition's appends paused (at most about 4096 offsets) is counted but not held back, so that produces do not wait on the throttle. Dynamic like leader.replication.throttled.rate.",
	},
	{
		Name: "replica.fetch.response.max.bytes", Kind: KindInt, Default: "10485760", Min: 0, Max: math.MaxInt32,
		Doc: "Bytes a follower asks for in one fetch over all partitions.",
	},
	{
		Name: "replica.fetch.min.bytes", Kind: KindInt, Default: "1", Min: 1, Max: math.MaxInt32,
		Doc: "Bytes the leader waits for before answering a follower's fetch, up to replica.fetch.wait.max.ms.",
	},
	{
		Name: "replica.fetch.wait.max.ms", Kind: KindDurationMs, Default: "500", Min: 0, Max: maxDurationMs,
		Doc: "Longest the leader holds a follower's fetch waiting for data; at most replica.lag.time.max.ms.",
	},

	{
		Name: "max.incremental.fetch.session.cache.slots", Kind: KindInt, Default: "1000", Min: 0, Max: math.MaxInt32,
		Doc: "Incremental fetch sessions (KIP-227) a broker keeps; when full, a new session evicts an idle or weaker one or is not created.",
	},

	// Controller and leadership.
	{
		Name: "broker.session.timeout.ms", Kind: KindDurationMs, Default: "9000", Min: 1, Max: maxDurationMs,
		Doc: "A broker whose heartbeats stop for this long is fenced and loses its leaderships.",
	},
	{
		Name: "broker.heartbeat.interval.ms", Kind: KindDurationMs, Default: "2000", Min: 1, Max: maxDurationMs,
		Doc: "How often a broker heartbeats to the controller; less than broker.session.timeout.ms.",
	},

	{
		Name: "auto.leader.rebalance.enable", Kind: KindBool, Default: "true",
		Doc: "Move leadership back to each partition's preferred replica when it is in the ISR.",
	},
	{
		Name: "leader.imbalance.check.interval.seconds", Kind: KindLong, Default: "300", Min: 1, Max: math.MaxInt64,
		Doc: "How often the controller looks for partitions not led by their preferred replica.",
	},
	{
		Name: "auto.replica.balance.enable", Kind: KindBool, Default: "false",
		Doc: "Skein's automatic balancer (Redpanda's continuous data balancing, Cruise Control's DiskUsageDistributionGoal): the active controller moves replicas onto a broker that joined, off a broker unavailable for longer than replica.balance.broker.unavailable.timeout.ms, off a broker holding more replicas than its open-files limit lets it keep open (log.open.files.per.replica), from the fullest to the emptiest broker when disk usage (the brokers' DescribeLogDirs, gathered every check) is off by more than replica.balance.disk.imbalance.percentage, and from the most to the least loaded broker when replica counts differ by more than replica.imbalance.per.broker.percentage; never onto a broker that would then be fuller than replica.balance.max.disk.usage.percent or hold more replicas than its open-files limit lets it keep open. A move puts the new replica at the replaced one's place, so auto.leader.rebalance.enable moves preferred leaderships after it. Moves are KIP-455 reassignments, so replication throttles apply.",
	},
	{
		Name: "replica.balance.check.interval.ms", Kind: KindLong, Default: "30000", Min: 1000, Max: math.MaxInt64,
		Doc: "How often the balancer (auto.replica.balance.enable) looks at the cluster.",
	},
	{
		Name: "replica.balance.max.concurrent.moves", Kind: KindInt, Default: "8", Min: 1, Max: 10_000,
		Doc: "The balancer starts no reassignment while this many partitions are being reassigned (its own moves and an operator's alike).",
	},
	{
		Name: "replica.balance.broker.unavailable.timeout.ms", Kind: KindLong, Default: "900000", Min: 1000, Max: math.MaxInt64,
		Doc: "How long a broker must be fenced, as seen by the active controller, before the balancer moves its replicas to other brokers (Redpanda's partition_autobalancing_node_availability_timeout_sec). A controller change restarts the count.",
	},
	{
		Name: "replica.imbalance.per.broker.percentage", Kind: KindInt, Default: "10", Min: 0, Max: 1000,
		Doc: "The balancer moves replicas when a broker holds more, or fewer, than the cluster's mean replica count per available broker by more than this percentage (and by more than one replica). A broker holding none while another holds two or more always counts. When the brokers' disks are known, a count move never leaves its destination over its disk share (replica.balance.disk.imbalance.percentage).",
	},
	{
		Name: "replica.balance.disk.imbalance.percentage", Kind: KindInt, Default: "10", Min: 0, Max: 1000,
		Doc: "Skein-specific (Cruise Control's disk.balance.threshold, as a percentage over 1): the balancer moves replicas when a broker's disk load (the sizes of the partitions assigned to it over the total bytes of its log directories) is above, or below, the cluster's mean load by more than this percentage of it, and by at least replica.balance.disk.imbalance.min.bytes. Each move makes the spread strictly narrower. Applies only while every available broker answered the controller's DescribeLogDirs.",
	},
	{
		Name: "replica.balance.disk.imbalance.min.bytes", Kind: KindLong, Default: "1073741824", Min: 0, Max: math.MaxInt64,
		Doc: "Skein-specific: a broker counts as over (or under) its disk share only when it holds at least this many bytes more (or fewer) than the share, so small clusters do not move small logs around.",
	},
	{
		Name: "replica.balance.max.disk.usage.percent", Kind: KindInt, Default: "80", Min: 1, Max: 100,
		Doc: "Skein-specific (Redpanda's partition_autobalancing_max_disk_usage_percent): a broker whose log-directory filesystems are fuller than this (reported total minus usable bytes, plus the replicas still to be copied to it) has replicas moved off it, and no move, the balancer's or `skein cluster balance`'s, takes a broker over it.",
	},
	{
		Name: "replica.balance.log.dirs.enable", Kind: KindBool, Default: "true",
		Doc: "Skein-specific (Cruise Control's IntraBrokerDiskUsageDistributionGoal and IntraBrokerDiskCapacityGoal): with auto.replica.balance.enable, the balancer also evens out each broker's log.dirs, moving one replica at a time between a broker's directories with AlterReplicaLogDirs (a local copy; replica.alter.log.dirs.io.max.bytes.per.second applies) when a directory's bytes over its volume's size are off the broker's mean by more than replica.balance.disk.imbalance.percentage and replica.balance.disk.imbalance.min.bytes, or when a directory's volume is fuller than replica.balance.max.disk.usage.percent. Turn it off to keep replicas where AlterReplicaLogDirs put them.",
	},

	// Consumer groups.
	{
		Name: "offsets.topic.replication.factor", Kind: KindShort, Default: "3", Min: 1, Max: maxReplicationFactor,
		Doc: "Replicas of __consumer_offsets, created on the first FindCoordinator; until that many brokers are alive, group coordination is unavailable. In a cluster of combined broker+controller nodes it is capped at the number of nodes in controller.quorum.voters, so a single broker works with the default.",
	},
	{
		Name: "offsets.topic.num.partitions", Kind: KindInt, Default: "50", Min: 1, Max: 10_000,
		Doc: "Partitions of __consumer_offsets; fixed once the topic exists. A group lives on partition abs(hash(group id)) modulo this count, as in Kafka.",
	},
	{
		Name: "offsets.topic.segment.bytes", Kind: KindInt, Default: "104857600", Min: 1, Max: math.MaxInt32,
		Doc: "segment.bytes of __consumer_offsets, set when the topic is created; smaller segments are compacted (and so loaded by a new coordinator) sooner.",
	},
	{
		Name: "transaction.state.log.replication.factor", Kind: KindShort, Default: "3", Min: 1, Max: maxReplicationFactor,
		Doc: "Replicas of __transaction_state, created on the first FindCoordinator for a transactional id; until that many brokers are alive, transactions are unavailable. Capped at the number of voters in a cluster of combined nodes, as offsets.topic.replication.factor is.",
	},
	{
		Name: "transaction.state.log.num.partitions", Kind: KindInt, Default: "50", Min: 1, Max: 10_000,
		Doc: "Partitions of __transaction_state; fixed once the topic exists. A transactional id lives on partition abs(hash(transactional id)) modulo this count, as in Kafka.",
	},
	{
		Name: "transaction.state.log.min.isr", Kind: KindInt, Default: "2", Min: 1, Max: math.MaxInt32,
		Doc: "min.insync.replicas of __transaction_state, set when the topic is created (at most its replication factor).",
	},
	{
		Name: "transaction.state.log.segment.bytes", Kind: KindInt, Default: "104857600", Min: 1, Max: math.MaxInt32,
		Doc: "segment.bytes of __transaction_state, set when the topic is created.",
	},
	{
		Name: "transaction.max.timeout.ms", Kind: KindDurationMs, Default: "900000", Min: 1, Max: math.MaxInt32,
		Doc: "The largest transaction.timeout.ms a producer may ask for; InitProducerId above it fails with INVALID_TRANSACTION_TIMEOUT.",
	},
	{
		Name: "transaction.partition.verification.enable", Kind: KindBool, Default: "true",
		Doc: "KIP-890 part 1: a partition leader asks the transaction coordinator (AddPartitionsToTxn, verify only) whether the partition is in the producer's ongoing transaction before it appends the transaction's first batch there; a batch for a partition not added is refused with INVALID_TXN_STATE.",
	},
	{
		Name: "add.partitions.to.txn.retry.backoff.ms", Kind: KindDurationMs, Default: "20", Min: 1, Max: math.MaxInt32,
		Doc: "KIP-890 part 2: the backoff before a partition leader asks the transaction coordinator again to add its partition to a transaction (Produce v12+, TxnOffsetCommit v5+) when the coordinator answered CONCURRENT_TRANSACTIONS (the producer's previous transaction still being completed).",
	},
	{
		Name: "add.partitions.to.txn.retry.backoff.max.ms", Kind: KindDurationMs, Default: "100", Min: 0, Max: math.MaxInt32,
		Doc: "KIP-890 part 2: how long a partition leader goes on asking the transaction coordinator to add its partition while it answers CONCURRENT_TRANSACTIONS, before the produce is answered with the error; it applies to adds only, not to the verification of older clients.",
	},
	{
		Name: "transactional.id.expiration.ms", Kind: KindDurationMs, Default: "604800000", Min: 1, Max: math.MaxInt32,
		Doc: "A transactional id with no transaction in progress and no update for this long is removed from __transaction_state.",
	},
	{
		Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Kind: KindDurationMs, Default: "10000", Min: 1, Max: math.MaxInt32,
		Doc: "How often the transaction coordinator looks for transactions past their timeout and aborts them.",
	},
	{
		Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Kind: KindDurationMs, Default: "3600000", Min: 1, Max: math.MaxInt32,
		Doc: "How often the transaction coordinator looks for transactional ids past transactional.id.expiration.ms.",
	},
	{
		Name: "offsets.retention.minutes", Kind: KindInt, Default: "10080", Min: 1, Max: math.MaxInt32,
		Doc: "Committed offsets of an empty group are deleted after this long.",
	},
	{
		Name: "offsets.retention.check.interval.ms", Kind: KindDurationMs, Default: "600000", Min: 1, Max: maxDurationMs,
		Doc: "How often expired committed offsets are looked for.",
	},
	{
		Name: "offset.metadata.max.bytes", Kind: KindInt, Default: "4096", Min: 0, Max: math.MaxInt32,
		Doc: "Largest metadata string accepted with a committed offset.",
	},
	{
		Name: "group.initial.rebalance.delay.ms", Kind: KindDurationMs, Default: "3000", Min: 0, Max: maxDurationMs,
		Doc: "How long a new group waits for more members before its first rebalance.",
	},
	{
		Name: "group.min.session.timeout.ms", Kind: KindDurationMs, Default: "6000", Min: 1, Max: maxDurationMs,
		Doc: "Smallest session timeout a consumer may ask for.",
	},
	{
		Name: "group.max.session.timeout.ms", Kind: KindDurationMs, Default: "1800000", Min: 1, Max: maxDurationMs,
		Doc: "Largest session timeout a consumer may ask for.",
	},
	{
		Name: "group.max.size", Kind: KindInt, Default: "2147483647", Min: 1, Max: math.MaxInt32,
		Doc: "Most members one consumer group may have; more are refused with GROUP_MAX_SIZE_REACHED.",
	},

	// Producers.
	{
		Name: "producer.id.expiration.ms", Kind: KindDurationMs, Default: "86400000", Min: 1, Max: maxDurationMs,
		Doc: "Forget an idempotent producer's sequence state after it has not written for this long.",
	},

	// Operations.
	{
		Name: "log.format", Kind: KindEnum, Default: "text", Values: []string{"text", "json"},
		Doc: "Skein extension: format of the server's own log lines on stderr.",
	},
	{
		Name: "log.level", Kind: KindEnum, Default: "info", Values: []string{"debug", "info", "warn", "error"},
		Doc: "Skein extension: least severe server log line printed at start: the level of the root broker logger, which IncrementalAlterConfigs on a BROKER_LOGGER resource changes at runtime (see Broker loggers).",
	},
}

// checkBy adapts a parser into a property check.
func checkBy[T any](parse func(string) (T, error)) func(string) error {
	return func(v string) error {
		_, err := parse(v)
		return err
	}
}

func checkMaxLen(n int) func(string) error {
	return func(v string) error {
		if len(v) > n {
			return fmt.Errorf("%d bytes is too long", len(v))
		}
		return nil
	}
}

var clusterIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{0,64}$`)

func checkOptionalIP(v string) error {
	if v != "" && net.ParseIP(v) == nil {
		return errors.New("not an IP address")
	}
	return nil
}

func checkClusterID(v string) error {
	if !clusterIDPattern.MatchString(v) {
		return errors.New("bad character or too long")
	}
	return nil
}

func checkListenerNames(v string) error {
	names, err := splitList(v)
	if err != nil {
		return err
	}
	for _, name := range names {
		if !validListenerName(name) {
			return fmt.Errorf("%q is not a listener name", name)
		}
	}
	return nil
}

func checkOptionalProtocol(v string) error {
	if v != "" && !slices.Contains(securityProtocols, v) {
		return fmt.Errorf("%q is not a security protocol", v)
	}
	return nil
}

func checkOptionalListenerName(v string) error {
	if v != "" && !validListenerName(v) {
		return fmt.Errorf("%q is not a listener name", v)
	}
	return nil
}

func checkDirs(v string) error {
	dirs, err := splitList(v)
	if err != nil {
		return err
	}
	for i, dir := range dirs {
		if err := checkDir(dir); err != nil {
			return err
		}
		for _, earlier := range dirs[:i] {
			if filepath.Clean(earlier) == filepath.Clean(dir) {
				return fmt.Errorf("%q appears twice", dir)
			}
		}
	}
	return nil
}

func checkDir(v string) error {
	if v == "" {
		return errors.New("empty path")
	}
	if containsControl(v) {
		return errors.New("control character in path")
	}
	return nil
}

func containsControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}
