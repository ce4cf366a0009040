package ctrlcore

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/balancer"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
)

// Config is what the core needs from the broker's configuration.
type Config struct {
	// Self is this controller's own node id. Its broker (if it has the
	// role) is never fenced for an expired session: this process is the
	// one deciding, so it is alive.
	Self int32
	// SessionTimeout is broker.session.timeout.ms.
	SessionTimeout time.Duration
	// RebalanceInterval is leader.imbalance.check.interval.seconds (at
	// least a second) when auto.leader.rebalance.enable is set, else 0.
	RebalanceInterval time.Duration
	// Balancer configures the automatic balancer, run every
	// BalanceInterval (0: auto.replica.balance.enable is off).
	Balancer        balancer.Config
	BalanceInterval time.Duration
	// PIDBlockSize is how many producer ids one AllocateProducerIds hands
	// out.
	PIDBlockSize int32
	// Broker resolves topic configs (write.caching,
	// unclean.leader.election.enable).
	Broker *config.Broker
	// BootstrapTransactionVersion is the transaction.version a new
	// cluster starts at (the first broker registration of an image that
	// is Fresh records it): metadata.TransactionVersionDefault, as Kafka
	// 4.0 formats new clusters; -1 records none (level 0). Set otherwise
	// only by the simulator, where Kafka's would be the storage tool's
	// --feature transaction.version=N.
	BootstrapTransactionVersion int16
}

// ConfigFor is the Config of a broker configured by b.
func ConfigFor(b *config.Broker, pidBlockSize int32) Config {
	cfg := Config{Self: b.NodeID, SessionTimeout: b.BrokerSessionTimeout, PIDBlockSize: pidBlockSize, Broker: b,
		BootstrapTransactionVersion: metadata.TransactionVersionDefault}
	if b.AutoLeaderRebalanceEnable {
		cfg.RebalanceInterval = max(b.LeaderImbalanceCheckInterval, time.Second)
	}
	cfg.Balancer, cfg.BalanceInterval = balancerConfig(b)
	return cfg
}

// unclean is the topic's unclean.leader.election.enable.
func (c *Core) unclean(t *metadata.Topic) bool {
	tc, err := config.ResolveTopic(c.cfg.Broker, t.Configs)
	return err == nil && tc.UncleanLeaderElection
}

// writeCaching is the topic's write.caching; a config that cannot be
// resolved counts as true, the side that never keeps a doubtful ELR member.
func (c *Core) writeCaching(t *metadata.Topic) bool {
	tc, err := config.ResolveTopic(c.cfg.Broker, t.Configs)
	return err != nil || tc.WriteCaching
}

// Core is the active controller's state. The zero value is unusable; use
// New.
type Core struct {
	cfg    Config
	active bool
	// caughtUp is set once a barrier entry proposed in this term has been
	// applied: everything committed before the term is then in the image,
	// and decisions may be taken against it.
	caughtUp bool
	queue    []decision
	inflight *inflight
	seq      uint64
	// maintenanceQueued keeps at most one expiry/election pass queued.
	maintenanceQueued bool
	lastRebalance     time.Time
	sessions          map[int32]*session
	// lastBalance is when the automatic balancer last ran; unavailableSince
	// when this controller first saw each fenced (or shutting down) broker
	// so.
	lastBalance      time.Time
	unavailableSince map[int32]time.Time
	// gather is the balancer's DescribeLogDirs round in progress, or the
	// one completed and not yet used (balance.go); nil when none.
	gather *gatherRound

	now time.Time // of the event being handled
	rd  Ready
}

// decision is one queued change. decide runs at the decision's turn
// against the latest image; settle runs inside the core once the outcome
// is known (committed and applied, refused, or failed) and returns the
// answer to hand to the runtime, if any.
type decision struct {
	what   string
	decide func(im *metadata.Image) ([]metadata.Record, error)
	settle func(im *metadata.Image, err error) func()
	// atCommit: the answer goes to Ready.AnswersAtCommit.
	atCommit bool
}

type inflight struct {
	id      uint64
	barrier bool
	d       decision
}

// Ready is what the runtime must do after an event.
type Ready struct {
	// Propose, when set, is an entry to append to the metadata log. The
	// runtime reports its outcome with ProposalDone(Propose.ID) once the
	// entry is applied to its image, or fails.
	Propose *Proposal
	// Answers complete requests. Run them in order, outside any lock the
	// runtime holds around the core: they call back into handlers.
	Answers []func()
	// AnswersAtCommit complete requests too, but tell nothing about the
	// partitions of the controller's own node: a runtime that holds
	// Answers until its node's partitions reflect the committed entry
	// gives these at once. A heartbeat's (a broker's controlled shutdown
	// moving thousands of leaderships to the controller's node) waited
	// seconds for that node to take them over, and the stopping broker
	// with it.
	AnswersAtCommit []func()
	// Notes are worth logging.
	Notes []Note
	// Fenced counts brokers fenced for an expired session (a leader
	// election each, for metrics).
	Fenced int
	// BalancerMoves are the reassignments the automatic balancer decided
	// in this event, each on the DescribeLogDirs answers of the round
	// last asked for; they take effect if the maintenance entry carrying
	// them commits.
	BalancerMoves []balancer.Move
	// BalancerRefused are the moves the balancer planned in this event
	// that the controller's reassignment check refused: none while the
	// two agree (the balancer plans on the same image, replica capacities
	// included).
	BalancerRefused []RefusedMove
	// LogDirMoves are the moves between a broker's log directories the
	// balancer decided (replica.balance.log.dirs.enable): the runtime
	// sends each broker its AlterReplicaLogDirs. Nothing is recorded: a
	// move that fails or is lost shows in the next round's reports, and
	// that round decides again.
	LogDirMoves []balancer.DirMove
	// DescribeLogDirs lists the brokers to ask for their log directories
	// (DescribeLogDirs v4, every partition) for the balancer; the runtime
	// reports each answer, or its failure, with LogDirsReported.
	DescribeLogDirs []int32
}

// RefusedMove is a balancer move and the error it was refused with.
type RefusedMove struct {
	Move balancer.Move
	Err  error
}

// Proposal is one metadata entry to propose.
type Proposal struct {
	ID      uint64
	Data    []byte
	What    string
	Records []metadata.Record // nil for a barrier
}

// Note is a log line.
type Note struct {
	Msg  string
	Args []any
}

// New returns an inactive core.
func New(cfg Config) *Core {
	return &Core{cfg: cfg, sessions: map[int32]*session{}, unavailableSince: map[int32]time.Time{}}
}

// Active reports whether this node acts as the active controller.
func (c *Core) Active() bool { return c.active }

// Busy reports whether a decision is queued or in flight.
func (c *Core) Busy() bool { return len(c.queue) > 0 || c.inflight != nil }

// Activate starts a term as the active controller: every broker of the
// image gets a fresh session, and the first decision waits for a barrier.
func (c *Core) Activate(now time.Time, im *metadata.Image) Ready {
	c.begin(now)
	c.abandon(kerr.NotController)
	c.active, c.caughtUp = true, false
	c.lastRebalance, c.lastBalance = now, now
	c.gather = nil
	clear(c.sessions)
	clear(c.unavailableSince)
	for _, br := range im.Brokers() {
		c.sessions[br.ID] = &session{seen: now}
	}
	return c.end()
}

// Deactivate ends the term: queued and in-flight decisions fail with
// NOT_CONTROLLER (an in-flight one may still commit; callers treat
// NOT_CONTROLLER as an unknown outcome and retry).
func (c *Core) Deactivate(now time.Time) Ready {
	c.begin(now)
	c.active, c.caughtUp = false, false
	c.gather = nil
	c.abandon(kerr.NotController)
	clear(c.sessions)
	return c.end()
}

func (c *Core) abandon(err error) {
	if f := c.inflight; f != nil {
		c.inflight = nil
		c.settle(f.d, nil, err)
	}
	q := c.queue
	c.queue = nil
	c.maintenanceQueued = false
	for _, d := range q {
		c.settle(d, nil, err)
	}
}

// Submit queues a decision; done gets its outcome once its records are
// applied (nil: committed, or nothing to change) or refused.
func (c *Core) Submit(now time.Time, im *metadata.Image, what string, decide func(*metadata.Image) ([]metadata.Record, error), done func(error)) Ready {
	c.begin(now)
	c.enqueue(im, decision{what: what, decide: decide, settle: func(_ *metadata.Image, err error) func() {
		return func() { done(err) }
	}})
	return c.end()
}

// ProposalDone reports the outcome of proposal id: nil once its entry is
// applied to im, else why it failed (the runtime maps quorum errors to
// Kafka codes: NOT_CONTROLLER, REQUEST_TIMED_OUT). After a failure the
// entry may still commit, so the next decision waits for a new barrier:
// it must see that entry's outcome before deciding. A failed barrier
// fails every queued decision with its error.
func (c *Core) ProposalDone(now time.Time, im *metadata.Image, id uint64, err error) Ready {
	c.begin(now)
	if f := c.inflight; f != nil && f.id == id {
		c.inflight = nil
		switch {
		case err != nil && f.barrier:
			// Nothing can be decided before a barrier commits: the queued
			// decisions fail with it (their callers retry) rather than
			// wait for, or loop on, a quorum that cannot commit.
			c.abandon(err)
		case err != nil:
			c.caughtUp = false
			c.settle(f.d, im, err)
		case f.barrier:
			c.caughtUp = true
		default:
			c.settle(f.d, im, nil)
		}
		c.run(im)
	}
	return c.end()
}

func (c *Core) enqueue(im *metadata.Image, d decision) {
	if !c.active {
		c.settle(d, im, kerr.NotController)
		return
	}
	c.queue = append(c.queue, d)
	c.run(im)
}

// run takes queued decisions one at a time against im until one needs a
// proposal.
func (c *Core) run(im *metadata.Image) {
	for c.active && c.inflight == nil && len(c.queue) > 0 {
		if !c.caughtUp {
			c.propose(&inflight{barrier: true}, metadata.BarrierEntry, "barrier", nil)
			return
		}
		d := c.queue[0]
		c.queue = c.queue[1:]
		recs, err := d.decide(im)
		if err == nil && len(recs) > 0 {
			if _, aerr := im.Apply(recs...); aerr != nil {
				err = fmt.Errorf("%w: %v", kerr.InvalidRequest, aerr)
			}
		}
		if err != nil || len(recs) == 0 {
			c.settle(d, im, err)
			continue
		}
		data, err := metadata.EncodeEntry(recs)
		if err != nil {
			c.settle(d, im, fmt.Errorf("%w: %v", kerr.UnknownServerError, err))
			continue
		}
		c.propose(&inflight{d: d}, data, d.what, recs)
		return
	}
}

func (c *Core) propose(f *inflight, data []byte, what string, recs []metadata.Record) {
	c.seq++
	f.id = c.seq
	c.inflight = f
	c.rd.Propose = &Proposal{ID: f.id, Data: data, What: what, Records: recs}
}

func (c *Core) settle(d decision, im *metadata.Image, err error) {
	if d.settle == nil {
		return
	}
	if a := d.settle(im, err); a != nil {
		if d.atCommit {
			c.rd.AnswersAtCommit = append(c.rd.AnswersAtCommit, a)
		} else {
			c.rd.Answers = append(c.rd.Answers, a)
		}
	}
}

func (c *Core) begin(now time.Time) {
	c.now = now
	c.rd = Ready{}
}

func (c *Core) end() Ready {
	rd := c.rd
	c.rd = Ready{}
	return rd
}

func (c *Core) note(msg string, args ...any) {
	c.rd.Notes = append(c.rd.Notes, Note{Msg: msg, Args: args})
}
