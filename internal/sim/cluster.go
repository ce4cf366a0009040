package sim

import (
	"fmt"
	"strconv"
	"time"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/quorum"
)

// simEpochMs is the wall-clock time at simulated time zero (batch
// timestamps, retention): fixed, so runs do not depend on the real clock.
const simEpochMs = 1_767_225_600_000 // 2026-01-01T00:00:00Z

// topicName is the one topic every run creates and writes.
const topicName = "sim"

// Cluster is one simulated run.
type Cluster struct {
	opts      Options
	s         *scheduler
	net       *network
	trace     *trace
	nodes     map[int32]*node
	ids       []int32
	clusterID string
	// capacity is the replica capacity every broker registers
	// (Options.ReplicaCapacity, creationCapacity), 0: none.
	capacity int32
	// shrunk is the capacity a node registers since it shrank
	// (Options.ReplicaCapacityShrink), by node.
	shrunk map[int32]int32
	// registered is each registration's replica count in the earliest
	// image checked that holds it (checkCapacity).
	registered map[registration]heldAt
	check      *checker
	faults     *faultState
	clients    []client
	members    []*groupMember

	topicID metadata.TopicID
	// creating is the controller process deciding the topics' creation,
	// nil when none is: a decision whose process died never calls back.
	creating *process
	// uncleanAskedOf is the controller recoverLeaderless last asked.
	uncleanAskedOf *process
	healed         bool
	stopped        bool // a violation ends the run
	// voters is the operator changing a dynamic quorum's voters
	// (FaultMix.Membership), nil for a static quorum.
	voters *voterOps
}

// Result summarises a run.
type Result struct {
	Seed       uint64
	Options    Options
	SimTime    time.Duration
	Steps      int64
	TraceHash  uint64
	Violations []string
	Trace      string // the last events, for a person
	Stats      Stats
}

// Stats counts what a run did.
type Stats struct {
	Acked, Unacked, Consumed  int64
	GroupCommits              int64
	GroupSyncs, MemberCrashes int64
	// TxnEnded, TxnAborted and TxnRead count the transactional driver's
	// transactions ended (markers committed everywhere), those aborted,
	// and the transactional records its read_committed reader delivered.
	TxnEnded, TxnAborted, TxnRead int64
	// TxnCoordInits and TxnCoordEnds count the coordinator clients'
	// InitProducerId and EndTxn answered with success, TxnCoordRead their
	// records a read_committed reader delivered (Options.TxnCoordinator).
	TxnCoordInits, TxnCoordEnds, TxnCoordRead int
	// TxnCoordCommitted and TxnCoordAborted count the coordinator clients'
	// transactions the converged logs hold committed and aborted.
	TxnCoordCommitted, TxnCoordAborted int
	// TxnVerifications counts the produces a leader verified with the
	// coordinator (KIP-890 part 1), TxnVerifyMaxWaiting the most
	// transactional ids one leader had waiting for their coordinators'
	// answers, TxnStrays the batches sent to partitions outside their
	// transaction and TxnStraysAcked those a leader accepted (a violation
	// where the leaders verify).
	TxnVerifications, TxnVerifyMaxWaiting, TxnStrays, TxnStraysAcked int
	// TxnV2Ends counts the EndTxn v5 answers (transaction version 2,
	// KIP-890 part 2) that carried a bumped epoch.
	TxnV2Ends int
	// TxnQuickNext counts the version 2 clients' steps taken right after
	// an end's answer (the next transaction's produces, or an abort),
	// while that end's markers may still be written; TxnHeldMax is the
	// most requests one coordinator held at once waiting for a state
	// change in flight (txnhost.Host.CallHolding).
	TxnQuickNext, TxnHeldMax int
	// ChainCommitted and ChainAborted count the chain's transactions
	// (client_chain.go) committed and aborted, ChainRecords the input
	// records its committed output transformed exactly once.
	ChainCommitted, ChainAborted, ChainRecords int
	Crashes, PowerLosses                       int
	Partitions, Pauses                         int
	DiskFull, BitFlips                         int
	MessagesSent, Dropped                      int64
	Elections                                  int
	// DeadLeadersForgotten counts the quorum followers that forgot their
	// leader when told its process was gone (Core.PeerDown).
	DeadLeadersForgotten int
	// Stops counts the processes stopped cleanly (FaultMix.Stop), and
	// Handovers the quorum leaders among them whose successor was known
	// before they exited (Core.Resign).
	Stops, Handovers           int
	VotersAdded, VotersRemoved int // the operator's completed changes (FaultMix.Membership)
	VotersUpdated              int // UpdateRaftVoter answered without error at kraft.version 1 (a voter's new port)
	KRaftUpgrades              int // kraft.version upgrades that completed (FaultMix.Upgrade)
	// Reassignments started and cancelled (KIP-455, asked of the active
	// controller, which may refuse); Retired: replicas brokers deleted
	// after a reassignment moved them away.
	Reassignments, Cancels, Retired int
	// Throttles: reassignments the operator throttled (FaultMix.Throttle);
	// ThrottledBytes: what throttled leaders sent and followers fetched.
	Throttles, ThrottledBytes int
	BalancerMoves             int           // reassignments the controllers' balancer started (Options.Balancer)
	BalancerDiskMoves         int           // of which for disk imbalance (reported log sizes)
	BalancerDirMoves          int           // moves between one node's log directories the balancer asked for
	BalancerRefusals          int           // balancer moves the controller refused (each a violation)
	SnapshotsInstalled        int           // metadata snapshots sent by a quorum leader
	Converged                 time.Duration // simulated time from heal to convergence
	ACLAllowed, ACLDenied     int64         // the ACL prober's writes served and refused (Options.ACLs)
	// Moves of replicas between a node's log directories
	// (FaultMix.LogDirMoves): the operator's requests, the moves started,
	// and how they ended; Resumed counts moves a restart went on with
	// into the future log it kept.
	LogDirRequests, LogDirMoves, LogDirMovesDone, LogDirMovesCancelled int
	LogDirMovesAbandoned, LogDirMovesFailed, LogDirMovesResumed        int
	LogDirRetries                                                      int // failed moves the operator asked for again once healed
	// LogDirSwapPowerCuts: power cut at a filesystem call of a swap;
	// LogDirSwapsFinishedAtStart: decided swaps a restart finished.
	LogDirSwapPowerCuts, LogDirSwapsFinishedAtStart int
	LogDirMovesRedirected                           int // moves replaced by a move to another directory
	// CapacityRefusals: the operator's reassignments the controller
	// refused for a broker's replica capacity (Options.ReplicaCapacity).
	CapacityRefusals int
	// CapacityShrinks: registrations of a capacity below the replicas
	// listed on the node (Options.ReplicaCapacityShrink); BalancerDrains
	// the balancer's moves off a node over its capacity.
	CapacityShrinks, BalancerDrains int
}

// Run simulates one seed.
func Run(opts Options) Result {
	c := newCluster(opts)
	c.run()
	return c.result()
}

func newCluster(opts Options) *Cluster {
	opts = opts.withDefaults()
	s := newScheduler(opts.Seed)
	c := &Cluster{opts: opts, s: s, trace: newTrace(), nodes: map[int32]*node{},
		clusterID: "sim-" + strconv.FormatUint(opts.Seed, 36)}
	c.trace.verbose, c.trace.out = opts.Verbose, opts.Out
	s.stuck = func(steps int) {
		c.violation("livelock: %d events at simulated time %v without time moving on (the trace's last lines show what repeats)", steps, s.now)
	}
	c.net = newNetwork(s, opts.Net)
	c.check = newChecker(c)
	for i := 1; i <= opts.Nodes; i++ {
		id := int32(i)
		c.nodes[id] = c.newNode(id)
		c.ids = append(c.ids, id)
	}
	c.capacity = c.creationCapacity()
	c.faults = newFaultState(c)
	if opts.Faults.Membership {
		c.voters = newVoterOps(c)
	}
	return c
}

func (c *Cluster) tracef(format string, args ...any) { c.trace.add(c.s.now, format, args...) }

// violation records a broken invariant and stops the run.
func (c *Cluster) violation(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.tracef("VIOLATION: %s", msg)
	c.check.violations = append(c.check.violations, msg)
	c.stopped = true
}

func (c *Cluster) nowMs() int64 { return simEpochMs + c.s.now.Milliseconds() }

func (c *Cluster) newTopicID() metadata.TopicID {
	var id metadata.TopicID
	for id.IsZero() {
		for i := range id {
			id[i] = byte(c.s.rng.Uint32())
		}
	}
	return id
}

func (c *Cluster) raftVoters() []uint64 {
	out := make([]uint64, len(c.ids))
	for i, id := range c.ids {
		out[i] = quorum.RaftID(id)
	}
	return out
}

// verifiesTxns: the leaders verify transactional produces with the
// coordinator (KIP-890 part 1), except where Options.Transactions' driver
// runs, which writes its own markers and has no coordinator to be
// verified by (Kafka would refuse its batches, as ours would).
func (c *Cluster) verifiesTxns() bool { return !c.opts.Transactions && !c.opts.txnVerifyOff }

func (c *Cluster) brokerConfig(id int32) (*config.Broker, error) {
	props := map[string]string{
		"node.id":                    strconv.Itoa(int(id)),
		"process.roles":              "broker,controller",
		"default.replication.factor": strconv.Itoa(c.opts.ReplicationFactor),
		"num.partitions":             strconv.Itoa(c.opts.Partitions),
		// The simulation's scaled-down timings (node.go), which the
		// controller core reads from here as production's does.
		"broker.session.timeout.ms":               strconv.Itoa(int(sessionTimeout.Milliseconds())),
		"broker.heartbeat.interval.ms":            strconv.Itoa(int(heartbeatInterval.Milliseconds())),
		"leader.imbalance.check.interval.seconds": "5",
	}
	if !c.verifiesTxns() {
		props["transaction.partition.verification.enable"] = "false"
	}
	if c.opts.Balancer {
		props["auto.replica.balance.enable"] = "true"
		props["replica.balance.check.interval.ms"] = "1000"
		props["replica.balance.max.concurrent.moves"] = "2"
		props["replica.balance.broker.unavailable.timeout.ms"] = "3000"
		// The simulated logs are kilobytes: a few of them make a disk
		// imbalance worth moving (disk.go's min bytes), so the balancer's
		// disk-driven moves run too, on the sizes the brokers report.
		props["replica.balance.disk.imbalance.min.bytes"] = "4096"
	}
	if c.opts.ACLs && !c.opts.authorizerOff {
		props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
		props["super.users"] = "User:" + simUser
		props["allow.everyone.if.no.acl.found"] = "false"
	}
	return config.NewBroker(props)
}

func (c *Cluster) run() {
	for _, id := range c.ids {
		if err := c.nodes[id].start(); err != nil {
			c.violation("start %s: %v", c.nodes[id], err)
			return
		}
	}
	c.s.after(100*time.Millisecond, c.ensureTopic)
	if c.voters != nil {
		c.s.after(membershipPeriod, c.voters.loop)
	}
	c.startClients()
	c.faults.start()
	stop := func() bool { return c.stopped }
	c.s.runUntil(c.opts.Duration, stop)
	if c.stopped {
		return
	}
	c.heal()
	deadline := c.opts.Duration + c.opts.Settle
	healedAt := c.s.now
	for !c.stopped && c.s.now < deadline {
		c.s.runUntil(min(c.s.now+250*time.Millisecond, deadline), stop)
		if c.stopped {
			return
		}
		c.recoverLeaderless()
		c.removeThrottle()
		c.retryLogDirMoves()
		if c.converged() {
			c.check.stats.Converged = c.s.now - healedAt
			c.tracef("converged %v after healing", c.s.now-healedAt)
			if c.probe() {
				c.check.final()
			}
			return
		}
	}
	c.violation("cluster did not converge within %v of healing: %s", c.opts.Settle, c.convergenceReport())
}

// heal ends every fault: restart dead nodes, resume paused ones, mend the
// network and the disks, and stop the clients from starting new work.
func (c *Cluster) heal() {
	c.healed = true
	if c.voters != nil {
		c.voters.heal()
	}
	c.tracef("healing every fault")
	c.net.healAll()
	c.net.cfg = netConfig{MinDelay: c.opts.Net.MinDelay, MaxDelay: c.opts.Net.MaxDelay}
	for _, id := range c.ids {
		n := c.nodes[id]
		n.fs.SetCapacity(-1)
		n.fs.SetFault(nil)
		n.pausedUntil = 0
		if len(n.held) > 0 {
			// At once (a resume scheduled for the old pause end may
			// still fire later; it finds nothing held), still before
			// anything newer.
			n.resumeWait = false
			n.scheduleResume()
		}
		if n.up && n.proc.hasFailedLog() {
			// A log failed by an I/O error (a full disk during an
			// append, a truncation or a checkpoint) refuses everything
			// until the process restarts, and nothing in the broker
			// restarts it: the operator does, once the disk has room.
			n.tracef("restarted by the operator: a partition log failed")
			n.exit()
		}
		if n.up && n.proc.stopping != nil {
			// A clean stop still handing over (FaultMix.Stop) ends now,
			// and the process starts again as a stopped one would.
			n.tracef("clean stop cut short: healing")
			n.proc.stopping = nil
			n.exit()
		}
		if !n.up {
			c.restart(n)
		}
	}
}

func (c *Cluster) restart(n *node) {
	if err := n.start(); err != nil {
		n.tracef("restart failed: %v", err)
		n.exit()
		c.s.after(500*time.Millisecond, func() {
			if !n.up {
				c.restart(n)
			}
		})
	}
}

// processExited is a process dying on its own (a failed quorum fsync): the
// machine stays up, so the page cache survives, and it restarts.
func (c *Cluster) processExited(n *node) {
	n.exit()
	c.s.after(500*time.Millisecond, func() {
		if !n.up {
			c.restart(n)
		}
	})
}

// activeController is the node whose process is the active controller
// with the newest term, nil if none.
func (c *Cluster) activeController() *process {
	return c.newestWhere(func(p *process) bool { return p.ctl.Active() })
}

// newestWhere is the running process with the newest term among those
// that pick, nil if none.
func (c *Cluster) newestWhere(pick func(*process) bool) *process {
	var best *process
	for _, id := range c.ids {
		p := c.nodes[id].proc
		if p != nil && pick(p) && (best == nil || p.core.Term() > best.core.Term()) {
			best = p
		}
	}
	return best
}

// ensureTopic creates the run's topic once every node is registered, from
// the active controller's decision functions.
func (c *Cluster) ensureTopic() {
	if !c.topicID.IsZero() || c.stopped {
		return
	}
	c.s.after(100*time.Millisecond, c.ensureTopic)
	p := c.activeController()
	if p == nil || (c.creating != nil && c.creating.n.proc == c.creating && c.creating.ctl.Active()) {
		return
	}
	if t, ok := p.image.Topic(topicName); ok {
		c.topicID = t.ID
		c.tracef("topic %s created with id %s", topicName, shortID(t.ID))
		return
	}
	active := 0
	for _, id := range c.ids {
		if p.image.IsActive(id) {
			active++
		}
	}
	if active < c.opts.Nodes {
		return
	}
	c.creating = p
	want := c.topicRequests()
	ids := make([]metadata.TopicID, len(want))
	for i := range ids {
		ids[i] = c.newTopicID()
	}
	p.decide("topic creation", func(im *metadata.Image) ([]metadata.Record, error) {
		var all []metadata.Record
		for i, req := range want {
			recs, err := controller.CreateTopic(im, req, controller.Defaults{NumPartitions: 1, ReplicationFactor: 1}, ids[i],
				func(m map[string]string) error {
					_, err := config.ResolveTopic(p.cfg, m)
					return err
				})
			if err != nil {
				return nil, err
			}
			if im, err = im.Apply(recs...); err != nil {
				return nil, err
			}
			all = append(all, recs...)
		}
		return all, nil
	}, func(err error) {
		c.creating = nil
		if err != nil {
			c.tracef("topic creation failed: %v", err)
		}
	})
}

// topicRequests are the topics the run creates, in one decision.
func (c *Cluster) topicRequests() []controller.CreateTopicRequest {
	configs := map[string]string{"min.insync.replicas": strconv.Itoa(c.opts.MinISR)}
	if c.opts.WriteCaching {
		configs["write.caching"] = "true"
	}
	if c.opts.SegmentBytes > 0 {
		configs["segment.bytes"] = strconv.Itoa(c.opts.SegmentBytes)
	}
	want := []controller.CreateTopicRequest{{Name: topicName, NumPartitions: int32(c.opts.Partitions),
		ReplicationFactor: int16(c.opts.ReplicationFactor), Configs: configs}}
	if c.opts.Groups || c.opts.TxnCoordinator {
		want = append(want, controller.CreateTopicRequest{Name: offsetsTopic, NumPartitions: 1,
			ReplicationFactor: int16(c.opts.ReplicationFactor), Configs: map[string]string{"min.insync.replicas": strconv.Itoa(c.opts.MinISR)}})
	}
	if c.opts.TxnCoordinator {
		want = append(want, controller.CreateTopicRequest{Name: txnStateTopic, NumPartitions: 1,
			ReplicationFactor: int16(c.opts.ReplicationFactor), Configs: map[string]string{"min.insync.replicas": strconv.Itoa(c.opts.MinISR)}},
			controller.CreateTopicRequest{Name: chainOutputTopic, NumPartitions: 1,
				ReplicationFactor: int16(c.opts.ReplicationFactor), Configs: map[string]string{"min.insync.replicas": strconv.Itoa(c.opts.MinISR)}})
	}
	return want
}

// probeTimeout bounds how long a converged cluster may take to
// acknowledge one acks=all record per partition.
const probeTimeout = 10 * time.Second

// probe writes one acks=all record to every partition through the
// Produce handler, as a client would, and requires every one to be
// acknowledged in time: a cluster that looks converged must also serve.
//
// The probe producer retries until the deadline, not for a fixed number
// of attempts: converged does not mean no ISR change is coming. A leader
// whose followers could not fetch for longer than replica.lag.time.max.ms
// (their requests were lost in a partition and are still waiting out their
// timeout) still counts them in sync while they hold its whole log, and
// shrinks the ISR at the first append after convergence, the probe's; the
// probe then meets NOT_ENOUGH_REPLICAS until they fetch again and rejoin,
// as Kafka's leader would do. That is a retriable error a real producer
// waits out (seed 1244 in TestRegressions).
func (c *Cluster) probe() bool {
	id := int32(clientEndpointBase + 900)
	deadline := c.s.now + probeTimeout
	pc := &producerClient{c: c, index: 900, spec: ProducerSpec{Acks: -1}, pid: -1, retryUntil: deadline,
		lc: &leaderCache{c: c, self: id, leaders: map[int32]int32{}, topic: topicName}, seq: map[int32]int32{}, busy: map[int32]bool{}}
	var recs []*sentRecord
	for part := range int32(c.opts.Partitions) {
		r := c.check.sent(fmt.Sprintf("probe-%d", part), part, pc.spec)
		recs = append(recs, r)
		pc.busy[part] = true
		pc.send(part, batch.Build([][]byte{[]byte(r.value)}, c.nowMs()), []*sentRecord{r}, 1, -1)
	}
	done := func() bool {
		for _, r := range recs {
			if !r.acked {
				return false
			}
		}
		return true
	}
	c.s.runUntil(deadline, func() bool { return c.stopped || done() })
	if c.stopped {
		return false
	}
	if !done() {
		c.violation("converged, but a probe record per partition was not acknowledged within %v: %s", probeTimeout, c.convergenceReport())
		return false
	}
	// The probes must reach every replica again before the logs are
	// compared (a follower may have dropped out of the ISR meanwhile).
	deadline = c.s.now + c.opts.Settle
	for !c.stopped && !c.converged() {
		if c.s.now >= deadline {
			c.violation("did not converge again within %v after the probes: %s", c.opts.Settle, c.convergenceReport())
			return false
		}
		c.s.runUntil(min(c.s.now+250*time.Millisecond, deadline), func() bool { return c.stopped })
	}
	return !c.stopped
}
