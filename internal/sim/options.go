package sim

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Options shape one run. Swarm derives them from the seed.
type Options struct {
	Seed              uint64
	Nodes             int           // 3 to 5, every one a broker and a controller
	Partitions        int           // of the one topic
	ReplicationFactor int           // 3 unless fewer nodes
	MinISR            int           // min.insync.replicas of the topic
	WriteCaching      bool          // write.caching of the topic
	SegmentBytes      int           // segment.bytes of the topic; 0 = default (one segment)
	Duration          time.Duration // of the faulty phase
	Settle            time.Duration // bound on convergence after healing
	Net               netConfig
	Faults            FaultMix
	Producers         []ProducerSpec
	Consumers         int
	Groups            bool // group members consume through a consumer group; a simple consumer commits offsets
	// TxnCoordinator adds transactional clients that drive the
	// transaction coordinator over __transaction_state (client_txn_coord.go);
	// Swarm sets it in a third of the seeds, from a source of its own.
	TxnCoordinator bool
	// Transactions adds a transactional producer that writes its own
	// markers and a read_committed reader (client_txn.go).
	Transactions bool
	// ACLs runs the StandardAuthorizer with an ACL toggler and prober
	// (acl.go); Swarm never sets it, so swarm seeds keep their runs.
	ACLs bool
	// Balancer turns on the controllers' automatic balancer
	// (auto.replica.balance.enable) with scaled-down timings: it moves
	// replicas off brokers fenced for a few seconds and evens out the
	// replica counts, beside whatever else the run does.
	Balancer bool
	// LogDirs is how many log directories (log.dirs) each node has on
	// its disk; 0 or 1: one, "data".
	LogDirs int
	// ReplicaCapacity has every broker register a replica capacity (as
	// a real one derives it from its open-files limit,
	// metadata.Broker.ReplicaCapacity) of the most replicas the run's
	// topic creation places on one node, plus ReplicaCapacitySlack: the
	// controller then refuses reassignments and balancer moves that
	// would put more on a node, and the checker requires that no image
	// ever does.
	ReplicaCapacity      bool
	ReplicaCapacitySlack int
	// ReplicaCapacityShrink has the first node that restarts once the
	// run's topics exist register a capacity one below the replicas its
	// image lists on it, and keep it (a broker restarted with a lower
	// open-files limit): the controller then adds nothing to it, and a
	// balancer moves replicas off it to nodes with room
	// (capacityConvergence).
	ReplicaCapacityShrink bool
	// capacityUnderstated has the checker hold the brokers to one replica
	// fewer than they registered: the test that shows the capacity
	// check catches a broker holding more than its capacity.
	capacityUnderstated bool
	// authorizerOff leaves the authorizer out of the brokers' config
	// while the ACL checker runs: the test that shows the checker
	// catches a broker that does not authorize.
	authorizerOff bool
	// txnReaderSkipsLast has the read_committed reader drop the last
	// record of every transactional batch: the test that shows the
	// all-or-nothing checker catches a partial read.
	txnReaderSkipsLast bool
	// chainCommitsStart has the chain commit the input position its
	// transaction started from: the test that shows the exactly-once
	// checker catches input transformed twice.
	chainCommitsStart bool
	// txnVerifyOff turns transaction.partition.verification.enable off
	// while the coordinator clients still send their stray batches: the
	// test that shows the checker catches a leader that does not verify.
	txnVerifyOff bool
	// unsafeLogDelete deletes retired and future logs with a plain RemoveAll, which
	// a crash can undo, and strayFuturesKept leaves the sweep blind to
	// the future logs a restart kept of replicas that left: the tests
	// that show the log-directory checker catches a replica in two
	// directories and a future log left behind.
	unsafeLogDelete, strayFuturesKept bool

	Verbose bool         // print every trace line through Out
	Out     func(string) `json:"-"`
}

// FaultMix says which faults a run injects and how often.
type FaultMix struct {
	Every        time.Duration // mean time between faults; 0 = no faults
	Kill         bool          // kill -9 a process (page cache survives)
	PowerLoss    bool          // one machine loses power (unsynced data lost, torn writes)
	PowerLossAll bool          // every machine at once
	Partition    bool          // isolate a node, both ways
	OneWay       bool          // cut one direction of one link
	Pause        bool          // SIGSTOP a process, sometimes past the session timeout
	DiskFull     bool          // a node's disk fills up for a while
	BitFlip      bool          // a stored byte of a partition log rots
	// Stop stops a process cleanly as far as the quorum goes (a leader
	// hands its leadership over first, node_quorum_stop.go), then it
	// exits as a killed one does.
	Stop     bool
	Reassign bool // an operator reassigns a partition (KIP-455), changing its replication factor at times, or cancels
	// Throttle, with Reassign, has the operator throttle every other
	// reassignment (dynamic broker rates and throttled-replicas lists,
	// throttle.go) and remove the throttle once healed.
	Throttle bool
	// Membership makes the quorum dynamic and has an operator remove
	// voters and add them back while the other faults go on.
	Membership bool
	// Upgrade, with Membership, starts the quorum static
	// (controller.quorum.voters, kraft.version 0, for every process's
	// life): the operator first upgrades it to kraft.version 1, then
	// changes voters as with Membership alone.
	Upgrade bool
	// LogDirMoves, with Options.LogDirs > 1, has an operator move
	// replicas between a node's log directories (AlterReplicaLogDirs,
	// KIP-113), leaders' and followers', and at times call a move off.
	LogDirMoves bool
	// LogDirSecondThoughts, with LogDirMoves, has the operator follow
	// three in ten accepted moves within 5-60 ms with a cancel (back to
	// where the replica was) or a redirect to a third directory.
	LogDirSecondThoughts bool
}

// ProducerSpec is one simulated producer.
type ProducerSpec struct {
	Acks       int16 // 0, 1 or -1
	Idempotent bool
}

func (o Options) withDefaults() Options {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Partitions == 0 {
		o.Partitions = 2
	}
	if o.ReplicationFactor == 0 {
		o.ReplicationFactor = min(3, o.Nodes)
	}
	if o.MinISR == 0 {
		o.MinISR = 2
	}
	if o.Duration == 0 {
		o.Duration = 20 * time.Second
	}
	if o.Settle == 0 {
		o.Settle = 60 * time.Second
	}
	if o.Net.MaxDelay == 0 {
		o.Net.MinDelay, o.Net.MaxDelay = 100*time.Microsecond, 2*time.Millisecond
	}
	if o.Producers == nil {
		o.Producers = []ProducerSpec{{Acks: -1, Idempotent: true}}
	}
	if o.Out == nil {
		o.Out = func(string) {}
	}
	return o
}

// Swarm picks a run's shape from its seed: cluster size, topic settings,
// network quality, which faults and how often (some seeds get none), and
// the producers (acks=0/1/all, idempotent or not).
func Swarm(seed uint64, duration time.Duration) Options {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	o := Options{Seed: seed, Duration: duration}
	o.Nodes = 3 + r.IntN(3)
	o.Partitions = 1 + r.IntN(3)
	o.WriteCaching = r.IntN(5) == 0
	if r.IntN(3) == 0 {
		o.SegmentBytes = 1024 << r.IntN(5) // many segments: rolls, sealed indexes, recovery points
	}
	o.Net = netConfig{MinDelay: 100 * time.Microsecond, MaxDelay: time.Duration(1+r.IntN(10)) * time.Millisecond}
	if r.IntN(2) == 0 {
		o.Net.DropRate = 0.02 * r.Float64()
		o.Net.DupRate = 0.02 * r.Float64()
		o.Net.SlowRate = 0.05 * r.Float64()
		o.Net.SlowDelay = 100 * time.Millisecond
	}
	if r.IntN(8) != 0 {
		o.Faults = FaultMix{Every: time.Duration(300+r.IntN(3000)) * time.Millisecond,
			Kill: r.IntN(2) == 0, PowerLoss: r.IntN(2) == 0, PowerLossAll: r.IntN(4) == 0,
			Partition: r.IntN(2) == 0, OneWay: r.IntN(3) == 0, Pause: r.IntN(3) == 0, DiskFull: r.IntN(4) == 0,
			BitFlip: r.IntN(6) == 0}
		// Drawn from a source of its own, so every other choice of the
		// seed (and the regressions pinned to seeds) stays as it was.
		o.Faults.Reassign = rand.New(rand.NewPCG(seed, 0x4ea55)).IntN(2) == 0
		// Its own source too: the seeds without it keep their runs.
		o.Faults.Throttle = o.Faults.Reassign && rand.New(rand.NewPCG(seed, 0x7407)).IntN(2) == 0
		// Its own source too: the seeds without it keep their runs.
		o.Faults.Stop = rand.New(rand.NewPCG(seed, 0x5709)).IntN(3) == 0
	}
	o.Producers = []ProducerSpec{{Acks: -1, Idempotent: true}}
	for range r.IntN(3) {
		acks := []int16{-1, 1, 0}[r.IntN(3)]
		o.Producers = append(o.Producers, ProducerSpec{Acks: acks, Idempotent: acks == -1 && r.IntN(2) == 0})
	}
	o.Consumers = 1 + r.IntN(2)
	o.Groups = r.IntN(2) == 0
	// A source of its own, as for Reassign: the seed's other choices stay.
	o.Balancer = rand.New(rand.NewPCG(seed, 0xba1a)).IntN(3) == 0
	// Its own source too: the seeds without it keep their runs.
	o.TxnCoordinator = rand.New(rand.NewPCG(seed, 0x7c00d)).IntN(3) == 0
	return o
}

func (o Options) String() string {
	s := fmt.Sprintf("nodes=%d partitions=%d rf=%d minisr=%d write.caching=%v segment.bytes=%d net=%+v faults=%+v producers=%+v consumers=%d groups=%v transactions=%v",
		o.Nodes, o.Partitions, o.ReplicationFactor, o.MinISR, o.WriteCaching, o.SegmentBytes, o.Net, o.Faults, o.Producers, o.Consumers, o.Groups, o.Transactions)
	if o.ACLs {
		s += " acls=true"
	}
	if o.TxnCoordinator {
		s += " txn-coordinator=true"
	}
	if o.ReplicaCapacity {
		s += fmt.Sprintf(" replica-capacity=peak+%d", o.ReplicaCapacitySlack)
		if o.ReplicaCapacityShrink {
			s += " replica-capacity-shrink=true"
		}
	}
	if o.LogDirs > 1 {
		s += fmt.Sprintf(" log.dirs=%d", o.LogDirs)
	}
	return s
}
