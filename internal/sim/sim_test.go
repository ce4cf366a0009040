package sim

import (
	"flag"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"
)

var (
	flagSeeds    = flag.Int("sim.seeds", 200, "how many seeds TestSeeds runs (from -sim.first on, swarm fault mixes; 50 with -short)")
	flagFirst    = flag.Uint64("sim.first", 1, "the first seed TestSeeds and TestGroups run, for a batch beyond the ones already run")
	flagSeed     = flag.Uint64("sim.seed", 0, "run only this seed, printing its whole trace with -v")
	flagDuration = flag.Duration("sim.duration", 10*time.Second, "simulated length of each run's faulty phase")
)

// runSeed runs one swarm seed. etcd raft draws its election jitter from
// crypto/rand; cryptotest makes that stream a function of the seed too.
func runSeed(t *testing.T, seed uint64, verbose bool) Result {
	cryptotest.SetGlobalRandom(t, seed)
	o := Swarm(seed, *flagDuration)
	o.Verbose = verbose
	o.Out = func(s string) { t.Log(s) }
	return Run(o)
}

// faultySwarm is the swarm's run of seed, with kills, power losses and
// partitions every 2 s in the seeds that have no faults.
func faultySwarm(seed uint64, d time.Duration) Options {
	o := Swarm(seed, d)
	if o.Faults.Every == 0 {
		o.Faults = FaultMix{Every: 2 * time.Second, Kill: true, PowerLoss: true, Partition: true}
	}
	return o
}

// runOptions runs o, a run made of seed's options, with its trace on t.
func runOptions(t *testing.T, seed uint64, o Options, verbose bool) Result {
	cryptotest.SetGlobalRandom(t, seed)
	o.Verbose = verbose
	o.Out = func(s string) { t.Log(s) }
	return Run(o)
}

// seedBatch runs options' run of -sim.seed alone, its whole trace with -v,
// or of -sim.seeds seeds from -sim.first on (at most 20 with -short), one
// subtest each, giving each run's result to each. It returns how many
// seeds the batch ran, 0 for -sim.seed.
func seedBatch(t *testing.T, options func(seed uint64) Options, each func(Result)) int {
	if *flagSeed != 0 {
		report(t, runOptions(t, *flagSeed, options(*flagSeed), testing.Verbose()))
		return 0
	}
	seeds := *flagSeeds
	if testing.Short() {
		seeds = min(seeds, 20)
	}
	for seed := *flagFirst; seed < *flagFirst+uint64(seeds); seed++ {
		var r Result
		t.Run("", func(t *testing.T) {
			r = runOptions(t, seed, options(seed), false)
			report(t, r)
		})
		each(r)
	}
	return seeds
}

// TestSeeds runs many seeds; a failing one prints its seed, the options
// the swarm chose and the events that led to the violation.
func TestSeeds(t *testing.T) {
	if *flagSeed != 0 {
		t.Run("seed", func(t *testing.T) {
			r := runSeed(t, *flagSeed, testing.Verbose())
			report(t, r)
		})
		return
	}
	seeds := *flagSeeds
	if testing.Short() {
		seeds = min(seeds, 50)
	}
	var simulated time.Duration
	var steps int64
	var txnSeeds, committed, aborted, read, chainCommitted, chainAborted, chainRecords int
	for seed := *flagFirst; seed < *flagFirst+uint64(seeds); seed++ {
		var r Result
		t.Run("", func(t *testing.T) {
			r = runSeed(t, seed, false)
			report(t, r)
		})
		simulated += r.SimTime
		steps += r.Steps
		if r.Options.TxnCoordinator {
			txnSeeds++
		}
		committed, aborted, read = committed+r.Stats.TxnCoordCommitted, aborted+r.Stats.TxnCoordAborted, read+r.Stats.TxnCoordRead
		chainCommitted, chainAborted, chainRecords = chainCommitted+r.Stats.ChainCommitted, chainAborted+r.Stats.ChainAborted, chainRecords+r.Stats.ChainRecords
	}
	t.Logf("%d seeds, %v simulated, %d events; %d with the transaction coordinator: %d transactions committed, %d aborted, %d transactional records read committed; chain: %d transactions committed, %d aborted, %d input records transformed exactly once",
		seeds, simulated, steps, txnSeeds, committed, aborted, read, chainCommitted, chainAborted, chainRecords)
}

func report(t *testing.T, r Result) {
	t.Helper()
	if len(r.Violations) > 0 {
		t.Fatal(r.Failure(strings.SplitN(t.Name(), "/", 2)[0]))
	}
	t.Logf("seed %d: %v simulated, %d events, trace %016x, %+v", r.Seed, r.SimTime, r.Steps, r.TraceHash, r.Stats)
}

// TestDeterminism runs seeds twice and compares complete traces: any
// dependence on map order, the real clock or goroutine scheduling shows.
func TestDeterminism(t *testing.T) {
	var acked int64
	for _, seed := range []uint64{3, 7, 11} {
		var a, b Result
		t.Run("first", func(t *testing.T) { a = runSeed(t, seed, false) })
		t.Run("second", func(t *testing.T) { b = runSeed(t, seed, false) })
		if a.TraceHash != b.TraceHash || a.Steps != b.Steps || a.SimTime != b.SimTime {
			t.Fatalf("seed %d is not deterministic: hashes %x / %x, steps %d / %d\nfirst:\n%s\nsecond:\n%s",
				seed, a.TraceHash, b.TraceHash, a.Steps, b.Steps, a.Trace, b.Trace)
		}
		acked += a.Stats.Acked
	}
	if acked == 0 {
		t.Fatal("the runs acknowledged nothing; they did not exercise the cluster")
	}
}

// TestBitFlips runs seeds whose only faults are flipped bits in stored
// batches, with crashes to make recovery read them.
func TestBitFlips(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			o := Swarm(seed, *flagDuration)
			o.Faults = FaultMix{Every: time.Second, BitFlip: true, Kill: true}
			o.Verbose = *flagSeed == seed
			o.Out = func(s string) { t.Log(s) }
			report(t, Run(o))
		})
	}
}

// TestRegressions replays runs that found bugs, with the options the
// swarm gave them then (spelled out, so a later swarm change cannot move
// them). A change to the simulator itself can still change what a seed
// does: re-pin by reverting the fix and picking seeds that fail again.
//

// Seed 16 (re-pinned as 115 and 328, below): a leader proposed adding a follower to the ISR of the group
// offsets partition; the controller lost office after proposing the entry
// and answered NOT_CONTROLLER, but its successor committed it. The leader
// dropped the proposal on that answer (replication.Leader's
// OnISRChangeRejected does for any error but the stale-view ones), so the
// HW passed the follower's position, and after failover the follower led
// without an acknowledged offset commit. Fixed in the simulated runtime:
// an unknown outcome is resent, never reported as a refusal; node and sim
// now share that rule (replication.Leader.OnISRAnswer, through the replica
// core). (Found first as swarm seed
// 905, whose run no longer reproduces it.) Seed 16 no longer reproduced it
// either; re-pinned on 2026-12-02 to seeds 115 and 328 of the same options:
// with the old rule restored (an unknown outcome drops the proposal),
// they are the failures among seeds 1-600, each a record read twice with
// different values (a committed tail truncated).
//
// Seed 1244: not a broker bug. A partition isolated the leader of sim-0;
// the followers' fetches sent meanwhile were lost and still waiting out
// their timeout when the cluster converged, so the leader, seeing them
// hold its whole log, counted them in sync until the probe's append, then
// shrank the ISR to itself (their last catch-up was older than
// replica.lag.time.max.ms, as in Kafka) and answered NOT_ENOUGH_REPLICAS
// until they fetched again and rejoined 0.65s later. The probe producer
// gave up after its 8 attempts, 9s before the probe deadline. Fixed in the
// harness: the probe retries until its deadline, as a Kafka producer
// retries until delivery.timeout.ms.
//
// Seed 160 (found with -sim.duration=60s; re-pinned as 104, below): a node fenced during a
// partition caught up by installing a metadata snapshot, which left its
// image's version at the number of snapshot records instead of the
// snapshot's index. It reported that as its metadata offset in every
// heartbeat, the controller unfences a broker only once that offset
// reaches its registration, and no entry was committed after healing to
// correct it: fenced for good. Fixed in quorum.Snapshotter (Restore gets
// the index) and both snapshotters. Seed 160 no longer reproduced it;
// re-pinned on 2026-12-02 to seed 104 of the same options, the one of
// seeds 1-800 that fails with the image version left at the record count
// (n1 installs the snapshot at index 102 as version 6 and stays fenced).
//
// Seed 172 (found with -sim.duration=2m): the coordinator n3, isolated
// from the other nodes but not from the members, appended the leader's
// SyncGroup assignment of generation 18; the write timed out and n3
// reloaded the partition from its log, whose uncommitted tail held that
// record. The reloaded coordinator, still leader in its own view, answered
// a member's rejoin and SyncGroup from it at once (nothing it wrote was
// pending), handing out partition 0 in a generation that was never
// committed: n3's tail was truncated and the new coordinator n1, loaded
// at generation 17, made a generation 18 of its own that gave partition 0
// to another member. Fixed in both runtimes: a loaded coordinator's
// answers wait until the high watermark covers the log end it replayed
// (grouphost.Host.Activate), as its own writes' answers do. Since both runtimes run
// one grouphost.Host (whose outcomes reach the simulator one event later),
// seed 172 no longer fails with that rule reverted; TestGroups seed 994
// does (checked on 2026-12-01: the only one of the first 5,000 group
// seeds; a member syncs into generation 2 after it was in generation 3),
// so it is pinned below with TestGroups' options.
//
// Seed 5048 (found with -sim.duration=2m; only pauses and full disks): n1,
// the last ISR member of the write.caching sim-0, was fenced into its ELR.
// A restarted n1 registered vouching for its last epoch 58, the
// controller committed epoch 94 and made it leader, and 3ms later the
// process exited (ENOSPC on the metadata log) before the answer told it
// 94, so broker.shutdown_state still vouched for 58. Fenced into the ELR
// again, its successor (same kernel boot: nothing lost) sent 58, which
// was not the last registered epoch, so the controller took it for an
// unclean restart and dropped n1 from the ELR: no ISR, no ELR, leaderless
// for good. Fixed in controller.restartLoss: a vouch for the epoch the
// last registration was itself made from (Broker.VouchedEpoch) counts.
func TestRegressions(t *testing.T) {
	idem := ProducerSpec{Acks: -1, Idempotent: true}
	isrUnknown := func(seed uint64) Options {
		return Options{Seed: seed, Nodes: 4, Partitions: 2, Duration: 20 * time.Second, Groups: true, Consumers: 1,
			Net:       netConfig{MinDelay: 100 * time.Microsecond, MaxDelay: 2 * time.Millisecond},
			Faults:    FaultMix{Every: 800 * time.Millisecond, Kill: true, PowerLoss: true, Partition: true, OneWay: true},
			Producers: []ProducerSpec{idem, {Acks: 1}}}
	}
	// unthrottled is a seed's swarm as it was pinned, before
	// FaultMix.Throttle existed: the regression keeps its run.
	unthrottled := func(o Options) Options {
		o.Faults.Throttle = false
		return o
	}
	for _, o := range []Options{
		isrUnknown(115),
		isrUnknown(328),
		{Seed: 2607, Nodes: 4, Partitions: 3, ReplicationFactor: 3, MinISR: 2, SegmentBytes: 2048, Duration: 10 * time.Second,
			Groups: true, Consumers: 2,
			Net: netConfig{MinDelay: 100 * time.Microsecond, MaxDelay: 8 * time.Millisecond, DropRate: 0.016698067377188763,
				DupRate: 0.011140382135546408, SlowRate: 0.04036866813063354, SlowDelay: 100 * time.Millisecond},
			Faults:    FaultMix{Every: 1257 * time.Millisecond, Kill: true, PowerLoss: true, Partition: true, Pause: true, DiskFull: true},
			Producers: []ProducerSpec{idem}},
		{Seed: 1244, Nodes: 3, Partitions: 2, ReplicationFactor: 3, MinISR: 2, SegmentBytes: 8192, Duration: 10 * time.Second,
			Consumers: 1,
			Net: netConfig{MinDelay: 100 * time.Microsecond, MaxDelay: time.Millisecond, DropRate: 0.003528385947349715,
				DupRate: 0.015666937386696538, SlowRate: 0.025535249336901183, SlowDelay: 100 * time.Millisecond},
			Faults:    FaultMix{Every: 2004 * time.Millisecond, Kill: true, PowerLoss: true, Partition: true},
			Producers: []ProducerSpec{idem}},
		{Seed: 104, Nodes: 3, Partitions: 3, ReplicationFactor: 3, MinISR: 2, SegmentBytes: 4096, Duration: 60 * time.Second,
			Groups: true, Consumers: 2,
			Net: netConfig{MinDelay: 100 * time.Microsecond, MaxDelay: time.Millisecond, DropRate: 0.003130464741245893,
				DupRate: 0.018901155404964294, SlowRate: 0.002539618743267885, SlowDelay: 100 * time.Millisecond},
			Faults:    FaultMix{Every: 2319 * time.Millisecond, Kill: true, Partition: true, OneWay: true},
			Producers: []ProducerSpec{idem}},
		{Seed: 172, Nodes: 3, Partitions: 2, ReplicationFactor: 3, MinISR: 2, Duration: 2 * time.Minute,
			Groups: true, Consumers: 2,
			Net:       netConfig{MinDelay: 100 * time.Microsecond, MaxDelay: 5 * time.Millisecond},
			Faults:    FaultMix{Every: 2960 * time.Millisecond, Kill: true, PowerLoss: true, Partition: true, Pause: true},
			Producers: []ProducerSpec{idem, {Acks: 1}}},
		groupSeed(994),
		// A replica retired by a reassignment and added back within one
		// process life is a new replica: its high watermark starts afresh
		// (the checker once held it to the one the deleted replica served).
		swarmAsFound(2965, 10*time.Second),
		// A replica closed while its node's image lagged was reopened, with
		// a bit flipped meanwhile that a clean close makes recovery trust;
		// the node now sweeps it once caught up, and flips spare it.
		swarmAsFound(2637, 10*time.Second),
		// A paused leader published a high watermark over a view in which
		// a replica since reassigned away (and deleted) was in its ISR.
		swarmAsFound(3869, 10*time.Second),
		{Seed: 5048, Nodes: 3, Partitions: 1, ReplicationFactor: 3, MinISR: 2, WriteCaching: true, SegmentBytes: 2048,
			Duration: 2 * time.Minute, Consumers: 1,
			Net:       netConfig{MinDelay: 100 * time.Microsecond, MaxDelay: 5 * time.Millisecond},
			Faults:    FaultMix{Every: 1166 * time.Millisecond, Pause: true, DiskFull: true},
			Producers: []ProducerSpec{idem, {Acks: 1}}},
		// A duplicated OffsetCommit(8) arrived after OffsetCommit(9) was
		// answered and (last arrival wins, as in Kafka) the coordinator
		// held 8: the group checker now tells a late arrival from a lost
		// commit (groupChecks.late). Found once the swarm ran the
		// transaction coordinator.
		Swarm(807, 10*time.Second),
		// A leader cut off by a partition applied its partition's epoch 12
		// (replicas [4 5]) and then 14 ([5 4], 5 being added back), never
		// 13, which removed 5 and let it delete its log. It kept 5's old
		// fetch position, proposed it into the ISR, and the empty 5 was
		// made leader: a committed transaction's records lost. Fixed in
		// metadata's apply: a replica leaving the set bumps the leader
		// epoch, as Kafka's controller does, so the leader starts its
		// followers afresh. Found once the swarm ran the chain clients.
		unthrottled(Swarm(580, 10*time.Second)),
		// Not a broker bug: the harness ran a killed process. A
		// WriteTxnMarkers answer (or its timeout) sent by n4's first
		// process reached n4's second: the dead coordinator went on
		// delivering markers, wrote to __transaction_state through the
		// dead replica (writing into the new process's files), and
		// restarted itself on a failed write, serving that replica's
		// stale log: the last stable offset fell from 60 to 12. The
		// coordinator's marker calls now go through process.callTimeout,
		// which drops what reaches a later incarnation, and a dead
		// process's replica stepping at all is a violation.
		Swarm(684, 10*time.Second),
		// Not a broker bug: the chain's EndTxn(commit) was acknowledged
		// (its PrepareCommit written) while a one-way cut held its COMMIT
		// marker back; the run counted as converged 250ms after healing,
		// before the marker's next retry, and the exactly-once check
		// found the committed transaction's output still open.
		// Convergence now waits until no transaction awaits its markers.
		Swarm(3423, 10*time.Second),
		// A replica that led __transaction_state-0 briefly with an empty
		// log kept that epoch; as a follower its log stayed empty, so
		// the fetcher skipped reconciling ("nothing of ours can
		// diverge") yet sent the epoch as its last fetched one, and the
		// leader, which never had it, answered every fetch with a
		// divergence: it never caught up. An empty log that names an
		// epoch now reconciles, and the truncation at its end drops it.
		Swarm(4255, 10*time.Second),
		// The coordinator's CompleteCommit, written once the markers were
		// on every partition, was refused with NOT_ENOUGH_REPLICAS (the
		// ISR of __transaction_state-0 had shrunk to its leader); the
		// coordinator stays loaded on that error, and nothing wrote the
		// completion again: the transaction stayed PrepareCommit, its
		// producer refused with CONCURRENT_TRANSACTIONS, and the run did
		// not converge. Fixed in txn.Coordinator.RetryCompletions (on the
		// abort round), as Kafka retries that append. (25 of seeds
		// 1-3600 failed so; 118 and 469 among them.)
		unthrottled(Swarm(118, 10*time.Second)),
		unthrottled(Swarm(469, 10*time.Second)),
		// A full disk under __transaction_state-0's leader: loading the
		// coordinator resumed a completion whose write failed at once,
		// the failure asked for a reload, and the reload came at the same
		// instant: a loop in which simulated time never moved on (the
		// seed never finished; a broker would spin on its CPU and log).
		// A reload after a failed write now waits ReloadBackoff
		// (txnhost, grouphost), and the scheduler reports a livelock as a
		// violation instead of running forever.
		Swarm(6085, 10*time.Second),
		// Replicas moving between log directories (TestLogDirSeeds).
		// Not a broker bug: the simulator deleted retired logs with a
		// plain RemoveAll, which a crash undid, so a replica moved,
		// reassigned away and back was on disk in two directories.
		// Retired logs are now deleted as node deletes them
		// (storage.DeleteDir) when a node has several directories.
		logDirAsFound(72, 10*time.Second),
		// A move abandoned (its replica reassigned away) had its future
		// log removed with a RemoveAll a power cut undid; the replica
		// came back, a newer move to another directory was cut by a
		// power loss before its swap, and the restart (two undecided
		// futures: the last listed kept) resumed the stale one: the
		// replica went where nobody had asked for last. Node and the
		// simulator now delete cancelled, failed and discarded future
		// logs crash-safely (storage.DeleteDir).
		logDirAsFound(271, 10*time.Second),
	} {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, o.Seed)
			report(t, Run(o))
		})
	}
}

// swarmAsFound is the swarm's run of a seed as it was before the swarm
// ran the transaction coordinator and the balancer, for regressions found
// then.
func swarmAsFound(seed uint64, d time.Duration) Options {
	o := Swarm(seed, d)
	o.TxnCoordinator = false
	o.Balancer = false
	return o
}

// groupSeed is seed as TestGroups runs it at the default length.
func groupSeed(seed uint64) Options {
	return Options{Seed: seed, Nodes: 3, Partitions: 2, Duration: 10 * time.Second, Groups: true,
		Faults:    FaultMix{Every: 800 * time.Millisecond, Kill: true, PowerLoss: true, Partition: true, Pause: true},
		Producers: []ProducerSpec{{Acks: -1, Idempotent: true}}, Consumers: 1}
}

// TestRegressionEmptyEpoch replays swarm seeds that fail when the fix is
// reverted (checked on 2026-12-01 with the fix in replicafetch.Session:
// 16 of the first 300 swarm seeds failed, these among them): a replica
// that led an epoch without appending kept that epoch in its cache after
// losing leadership; as a follower it named
// it as its last fetched epoch, the leader (which never had it) answered
// "diverging" and reconciliation found nothing to cut, forever: the replica
// never rejoined the ISR. Fixed in storage.Log.Truncate (truncating at the
// log end drops epochs that start there) and in the fetcher session (it
// truncates at the log end too). A swarm change can move these seeds:
// re-pin by reverting the fix and picking seeds that fail again.
func TestRegressionEmptyEpoch(t *testing.T) {
	for _, seed := range []uint64{55, 61, 76, 82, 113} {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			report(t, Run(Swarm(seed, 10*time.Second)))
		})
	}
}

// TestRegressionFollowerAppendFailure replays seeds of a disk-full mix that
// found a follower reporting unsynced batches as held: a fetch response's
// first batches were appended, a later one failed with ENOSPC, and the
// follower returned before its fsync; its next fetch offset (the log end)
// made the leader acknowledge acks=all for records one ISR member had
// only in its page cache (with a power loss after it: a consumed record
// lost). The simulated follower syncs what it appended before reporting
// the error, as node's partition now does too
// (both through replica.Replica.FollowerSynced).
func TestRegressionFollowerAppendFailure(t *testing.T) {
	// Re-pinned on 2026-12-01 (seeds 1-120 of this mix with the sync
	// reverted: 19, 24, 37, 82, 93 and 104 fail).
	for _, seed := range []uint64{19, 24, 37, 82} {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			report(t, Run(Options{Seed: seed, Nodes: 3, Partitions: 2, Duration: 10 * time.Second,
				Faults:    FaultMix{Every: 300 * time.Millisecond, DiskFull: true, Kill: true},
				Producers: []ProducerSpec{{Acks: -1, Idempotent: true}, {Acks: -1}, {Acks: 1}, {Acks: 0}}, Consumers: 1}))
		})
	}
}

// TestMembershipSeeds runs swarm seeds with a dynamic quorum whose voters
// the operator removes and adds back among the other faults; the quorum
// must keep one leader per term, never change a committed entry, and end
// with every node a voter.
func TestMembershipSeeds(t *testing.T) {
	options := func(seed uint64) Options {
		o := Swarm(seed, *flagDuration)
		if o.Faults.Every == 0 {
			o.Faults = FaultMix{Every: 2 * time.Second, Kill: true, Partition: true}
		}
		o.Faults.Membership = true
		// Every other seed starts static and is upgraded first.
		o.Faults.Upgrade = seed%2 == 0
		return o
	}
	var added, removed, updated, upgraded int
	seeds := seedBatch(t, options, func(r Result) {
		added += r.Stats.VotersAdded
		removed += r.Stats.VotersRemoved
		updated += r.Stats.VotersUpdated
		upgraded += r.Stats.KRaftUpgrades
	})
	if seeds > 0 {
		t.Logf("%d seeds: %d voters added, %d removed, %d updated (a new port), %d static quorums upgraded", seeds, added, removed, updated, upgraded)
	}
}
