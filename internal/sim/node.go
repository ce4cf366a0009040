package sim

import (
	"fmt"
	"log/slog"
	"path"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/balancer"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/fetchsession"
	"github.com/skein-log/skein/internal/loglevel"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/quorum"
	rcore "github.com/skein-log/skein/internal/replica"
	"github.com/skein-log/skein/internal/replthrottle"
	"github.com/skein-log/skein/internal/txnverify"
	"github.com/skein-log/skein/internal/vfs"
)

// Timing of the simulated runtime. They are shorter than production's
// defaults so that a few simulated seconds hold many failovers; the ratios
// between them are production's.
const (
	raftTick          = 50 * time.Millisecond
	electionTicks     = 10
	heartbeatInterval = 250 * time.Millisecond
	sessionTimeout    = 2 * time.Second
	replicaLagMax     = 2 * time.Second
	fetchMaxWait      = 200 * time.Millisecond
	fetchBackoff      = 100 * time.Millisecond
	pauseAfterRefusal = 200 * time.Millisecond
	controllerPeriod  = 100 * time.Millisecond
	isrTickPeriod     = 250 * time.Millisecond
	rpcTimeout        = time.Second
	maxFsyncDelay     = 3 * time.Millisecond
	// The ISR resend backoff (production: 100 ms doubling to 2 s, at
	// most a fifteenth of replica.lag.time.max.ms) in the same ratio to
	// replicaLagMax.
	isrResendBackoffMin = 25 * time.Millisecond
	isrResendBackoffMax = replicaLagMax / 15
)

// node is one simulated process: a broker with a combined controller.
// Its disk (fs) outlives crashes; everything else is rebuilt from the disk
// on restart, as a real process is.
type node struct {
	c  *Cluster
	id int32
	fs *vfs.Mem
	// dirID is the disk's directory id (KIP-858). The simulated disk is
	// never replaced, so it is fixed for the node's life.
	dirID metadata.DirectoryID
	// port is the controller port the current process listens on. In a
	// dynamic quorum it moves every other restart, so the voter must have
	// its record updated (UpdateRaftVoter); fixed otherwise.
	port uint16
	// boot counts the machine's boots: a power loss reboots it, a killed
	// process does not (its writes are in the page cache, which survives).
	boot uint64
	// stateEpoch and stateBoot are the broker's shutdown state file
	// (node.shutdownStateFile): the epoch the last process vouched for and
	// the boot it ran in. Processes never close their logs cleanly here
	// (FaultMix.Stop stops the quorum member cleanly, nothing else).
	stateEpoch int64
	stateBoot  uint64

	up bool
	// poweredOff: the machine lost power and has not booted again, so it
	// answers nothing on the network (a killed process's machine refuses
	// connections to its ports; see node_quorum_conn.go).
	poweredOff  bool
	incarnation uint64        // bumped by every crash, so a dead process's timers never fire
	pausedUntil time.Duration // a SIGSTOPped process runs nothing until then
	// held is what came due while paused, in order; it runs on resume
	// before anything newer, as a resumed process first reads what
	// waits on its sockets and timers.
	held       []func()
	resumeWait bool // a resume event is scheduled

	proc *process // nil while down
	// moveSeq numbers the future logs of moves between log directories
	// (logdirs.go), unique on the disk.
	moveSeq uint64
}

// process is the state of one incarnation of a node.
type process struct {
	n      *node
	cfg    *config.Broker
	server *api.Server
	log    *slog.Logger
	levels *loglevel.Levels

	core       *quorum.Core
	empty      *metadata.Image
	image      *metadata.Image
	controller int32 // the quorum leader's node id, -1 if unknown

	ctl      *ctrlcore.Core // the controller core, active while this node is the quorum leader
	inflight *proposal      // its proposal waiting to commit
	// reportedDisks are the disks the brokers answered the controller's
	// DescribeLogDirs round with, for checkBalancerMove.
	reportedDisks map[int32]*balancer.Disk

	brokerEpoch int64 // -1 until registered (sess.Epoch(), for the runtime's readers)
	// sweptEpoch is the registration whose reconcile last swept the
	// partition directories the image retires (node's strayCheckedEpoch).
	sweptEpoch int64
	// reconciled is the image reconcile last brought the replicas in
	// line with.
	reconciled metadata.Reconciled
	// isr batches the ISR changes of the replicas led here (node's
	// isrSender).
	isr rcore.ISRBatcher[*replica]
	// sess is the broker's side of its controller session, as node's.
	sess *ctrlcore.BrokerSession
	// fenceTimes is when this process's image first showed each broker
	// fenced (Metadata lists it a little longer, api.FenceTimes).
	fenceTimes api.FenceTimes
	parts      map[partKey]*replica
	// pageCache is the broker-wide page-cache budget's ledger
	// (node_pagecache.go).
	pageCache pageCacheLedger
	fetchers  map[int32]*fetcher
	// throttle is the replication throttle (throttle.go).
	throttle   *replthrottle.Quota
	waiters    []*fetchWaiter
	pokeQueued bool
	// pokeFollowers and pokeConsumers say whose waiting fetches the queued
	// poke re-reads (replica.Ready's WakeFollowers and WakeConsumers).
	pokeFollowers, pokeConsumers bool

	pidNext, pidEnd int64
	pidAsking       bool

	// sessions is the Fetch handler's session cache
	// (node/fetch_sessions.go), on simulated time.
	sessions *fetchsession.Cache
	// verifier batches this leader's transaction verifications per
	// coordinator (KIP-890 part 1), as node's txnVerifier; nil until the
	// first.
	verifier *txnverify.Manager

	// quorumChange is the AddRaftVoter or RemoveRaftVoter request waiting
	// for this process's membership change, nil if none.
	quorumChange *quorumChangeWaiter
	// raftLinks are the Raft transport's outbound connections, by peer
	// node id (node_quorum_conn.go).
	raftLinks map[int32]raftLink
	// stopping is a clean stop's exit, waiting for the quorum handover
	// (node_quorum_stop.go); nil while the process runs on.
	stopping func()
	// dirs are the log directories and the moves between them
	// (logdirs.go).
	dirs logDirs
}

// metadataDir is the metadata quorum's directory under "data", never a
// partition's.
const metadataDir = "__cluster_metadata-0"

type partKey struct {
	topic metadata.TopicID
	index int32
}

func (c *Cluster) newNode(id int32) *node {
	// Derived from the node id: the run's random stream must not shift.
	return &node{c: c, id: id, fs: vfs.NewMem(), dirID: metadata.DirectoryID{0: 0xd1, 1: byte(id), 15: 1}, stateEpoch: -1}
}

func (n *node) String() string { return fmt.Sprintf("n%d", n.id) }

func (n *node) tracef(format string, args ...any) {
	n.c.tracef("%s %s", n, fmt.Sprintf(format, args...))
}

// after runs fn on this incarnation after d; nothing runs if the process
// died meanwhile, and a paused process runs it when it resumes.
func (n *node) after(d time.Duration, fn func()) {
	inc := n.incarnation
	n.c.s.after(d, func() { n.runIf(inc, fn) })
}

func (n *node) runIf(inc uint64, fn func()) {
	if !n.up || n.incarnation != inc {
		return
	}
	if n.pausedUntil > n.c.s.now || len(n.held) > 0 {
		n.held = append(n.held, func() { n.runIf(inc, fn) })
		n.scheduleResume()
		return
	}
	fn()
}

// scheduleResume runs the held events once the pause is over (at once if
// it already is: healing ends pauses early).
func (n *node) scheduleResume() {
	if n.resumeWait {
		return
	}
	n.resumeWait = true
	n.c.s.after(n.pausedUntil-n.c.s.now, func() {
		n.resumeWait = false
		if n.pausedUntil > n.c.s.now { // paused again meanwhile
			n.scheduleResume()
			return
		}
		held := n.held
		n.held = nil
		for i, f := range held {
			f()
			if len(n.held) > 0 { // paused again by one of them
				n.held = append(held[i+1:len(held):len(held)], n.held...)
				n.scheduleResume()
				return
			}
		}
	})
}

// deliver runs an arriving message on the current incarnation, if any.
func (n *node) deliver(fn func()) {
	if !n.up {
		return
	}
	n.runIf(n.incarnation, fn)
}

// start boots a process from the node's disk.
func (n *node) start() error {
	n.up, n.poweredOff = true, false
	n.incarnation++
	n.pausedUntil, n.held = 0, nil
	p := &process{n: n, controller: -1, brokerEpoch: -1, sweptEpoch: -1,
		parts: map[partKey]*replica{}, fetchers: map[int32]*fetcher{}, raftLinks: map[int32]raftLink{}}
	// Broker.takeShutdownState: the previous process vouches for its
	// epoch only if the machine did not reboot since.
	previousClean := int64(-1)
	if n.stateBoot == n.boot {
		previousClean = n.stateEpoch
	}
	n.stateEpoch, n.stateBoot = previousClean, n.boot
	p.sess = ctrlcore.NewBrokerSession(n.id, previousClean)
	n.proc = p
	cfg, err := n.c.brokerConfig(n.id)
	if err != nil {
		return err
	}
	p.cfg = cfg
	p.throttle = replthrottle.NewQuota(n.id, cfg.LeaderReplicationThrottledRate, cfg.FollowerReplicationThrottledRate)
	p.ctl = ctrlcore.New(ctrlcore.ConfigFor(cfg, pidBlock))
	// Seeded from the node id and the incarnation, not the run's random
	// stream (which must not shift): a restarted process hands out other
	// session ids than its previous one, so a follower still holding an
	// old id is refused rather than served someone else's session, as
	// the random seed of node/fetch_sessions.go makes it.
	p.sessions = fetchsession.New(cfg.FetchSessionCacheSlots, fetchsession.DefaultEvictionMs, uint64(n.id)<<32^n.incarnation)
	// Only the root logger: the simulated process has no named ones.
	// Its level is the trace's, which records warnings and errors.
	p.levels = loglevel.New(slog.LevelWarn)
	p.log = slog.New(p.levels.Handler(traceHandler{n: n}))
	p.server = &api.Server{Backend: backend{p}, Log: p.log}
	if err := p.openLogDirs(); err != nil {
		return err
	}
	p.empty = metadata.Empty(n.c.clusterID)
	p.image = p.empty
	changing := n.c.voters != nil
	dynamic := changing && !n.c.opts.Faults.Upgrade
	voters := n.c.raftVoters()
	if dynamic {
		voters = nil
	}
	n.port = controllerPort
	if changing {
		// From the incarnation, not the run's random stream (which must
		// not shift for the pinned seeds).
		n.port = controllerPort + uint16(n.incarnation/2%3)
	}
	core, err := quorum.NewCore(quorum.CoreConfig{
		ID:             quorum.RaftID(n.id),
		Voters:         voters,
		Dynamic:        dynamic,
		Standalone:     dynamic && n.id == n.c.ids[0],
		Self:           n.member(),
		UpdateSelf:     changing,
		Dir:            path.Join("data", metadataDir),
		FS:             n.fs,
		ElectionTicks:  electionTicks,
		HeartbeatTicks: 1,
		// Small snapshots so that runs exercise snapshot installs too.
		SnapshotEntries: 20,
		KeepEntries:     5,
		SegmentBytes:    1 << 20,
		MaxEntryBytes:   256 << 10,
		Logger:          p.log,
		Snapshotter:     snapshotter{p},
	})
	if err != nil {
		return fmt.Errorf("%s: quorum: %w", n, err)
	}
	p.core = core
	n.tracef("started (incarnation %d)", n.incarnation)
	p.processReady()
	n.after(n.c.s.between(0, raftTick), p.tickLoop)
	n.after(n.c.s.between(0, heartbeatInterval), p.sessionLoop)
	n.after(n.c.s.between(0, isrTickPeriod), p.isrLoop)
	n.after(controllerPeriod, p.controllerLoop)
	return nil
}

// crash is a power loss: nothing of the process runs again, its disk
// keeps only what was synced (with torn writes if asked), and its machine
// answers nothing until it restarts.
func (n *node) crash(torn bool) {
	if !n.up {
		return
	}
	n.up, n.poweredOff = false, true
	n.pausedUntil, n.held = 0, nil
	n.proc = nil
	n.fs.Crash(vfs.CrashOptions{TornWrites: torn, Seed: n.c.s.rng.Uint64()})
	n.boot++
	n.tracef("crashed (torn writes: %v)", torn)
}

// exit ends the process while its machine stays up (kill -9, a crash,
// an operator's restart): nothing of it runs again, and the kernel closes
// its sockets.
func (n *node) exit() {
	inc := n.incarnation
	n.up, n.proc = false, nil
	n.c.closeSockets(n, inc)
}

// handle serves one request that arrived from endpoint from.
func (n *node) handle(from int32, req kmsg.Request, respond api.Respond) {
	p := n.proc
	r := &api.Request{Version: req.GetVersion(), ClientID: fmt.Sprintf("e%d", from), Listener: "PLAINTEXT", Body: req}
	if n.c.opts.ACLs {
		r.Principal = n.c.principalOf(from)
		respond = n.checkAuthorized(from, req, p.image, respond)
	}
	p.server.Serve(r, respond)
}

// partitionList returns the replicas in a stable order.
func (p *process) partitionList() []*replica {
	keys := make([]partKey, 0, len(p.parts))
	for k := range p.parts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b partKey) int {
		if c := slices.Compare(a.topic[:], b.topic[:]); c != 0 {
			return c
		}
		return int(a.index - b.index)
	})
	out := make([]*replica, len(keys))
	for i, k := range keys {
		out[i] = p.parts[k]
	}
	return out
}

// hasFailedLog reports whether a partition log of this process stopped
// after an I/O error (see storage.Log.Failed).
func (p *process) hasFailedLog() bool {
	for _, r := range p.partitionList() {
		if r.core.Failed() != nil || r.log.Failed() != nil {
			return true
		}
	}
	return false
}
