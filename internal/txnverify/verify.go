// Package txnverify is the partition leader's side of KIP-890 part 1, the
// server-side defence against hanging transactions (Kafka's
// AddPartitionsToTxnManager): before a leader appends the first
// transactional batch of a producer that has no transaction open on the
// partition, it asks the producer's transaction coordinator, with
// AddPartitionsToTxn v4's verify-only form, whether the partition is in
// the producer's ongoing transaction. A batch that arrives late (after its
// transaction was aborted) or for a partition the producer never added is
// then refused instead of opening a transaction no coordinator will ever
// end.
//
// The Manager is a core: it holds no lock, reads no clock and starts no
// goroutine. Verify and Answered return what to do as data (requests to
// send to coordinators, verifications to complete); internal/node and
// internal/sim carry them out.
//
// Batching, as Kafka's: one request in flight per coordinator; what
// arrives meanwhile waits and goes in the next request, one entry per
// transactional id. Unlike Kafka, a second verification of the same
// transactional id, producer id and epoch joins the waiting one (both are
// answered from the coordinator's one answer) instead of failing the
// first with NETWORK_EXCEPTION: the question is the same, and two produce
// requests of one producer to one leader are legitimate (up to five in
// flight). An older epoch than the one waiting is refused at once with
// INVALID_PRODUCER_EPOCH; a newer one replaces it, and the waiting one
// gets INVALID_PRODUCER_EPOCH, as in Kafka.
package txnverify

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/txn"
)

// TransactionStateTopic is where the coordinators keep their state; a
// transactional id's coordinator leads its partition.
const TransactionStateTopic = "__transaction_state"

// RequestVersion is the AddPartitionsToTxn version sent: v4 is the first
// with the brokers' batched, verify-only form. A request that adds
// partitions for a transaction version 2 producer (Verification.Add) is
// AddRequestVersion, KIP-890 part 2's.
const (
	RequestVersion    = 4
	AddRequestVersion = 5
)

// Limits. A coordinator refuses a request of more than 10,000
// transactions (api's maxTxnsPerVerify), so no more wait per coordinator;
// a transaction holds at most 100,000 partitions at its coordinator, so
// no more are asked about in one entry.
const (
	DefaultMaxWaitingPerCoordinator = 10_000
	DefaultMaxPartitionsPerTxn      = 100_000
)

// Config bounds the Manager's state.
type Config struct {
	// MaxWaitingPerCoordinator bounds the transactional ids waiting for
	// the next request to one coordinator; beyond, a verification fails
	// with COORDINATOR_NOT_AVAILABLE (a produce answers it as the
	// retriable NOT_ENOUGH_REPLICAS).
	MaxWaitingPerCoordinator int
	// MaxPartitionsPerTxn bounds the partitions of one waiting entry.
	MaxPartitionsPerTxn int
	// AddRetryBackoffMs and AddRetryMaxMs are
	// add.partitions.to.txn.retry.backoff.ms and
	// add.partitions.to.txn.retry.backoff.max.ms (KAFKA-18654): an add
	// (Verification.Add) the coordinator answers with
	// CONCURRENT_TRANSACTIONS, as it does while the producer's previous
	// transaction's markers are written, is asked again after the backoff
	// for as long as the add has taken less than the maximum, instead of
	// failing the produce (which a client would retry after a metadata
	// refresh). A maximum of 0 never retries.
	AddRetryBackoffMs int64
	AddRetryMaxMs     int64
}

// ConfigFor is the Manager's Config from the broker's properties.
func ConfigFor(b *config.Broker) Config {
	return Config{AddRetryBackoffMs: b.AddPartitionsToTxnRetryBackoff.Milliseconds(), AddRetryMaxMs: b.AddPartitionsToTxnRetryBackoffMax.Milliseconds()}
}

// Kafka's defaults of the two.
const (
	DefaultAddRetryBackoffMs = 20
	DefaultAddRetryMaxMs     = 100
)

// Verification asks whether Partitions are in the ongoing transaction of
// TransactionalID at ProducerID and Epoch. Done gets one error per
// partition, in order (nil: verified), through a Completion.
type Verification struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	Partitions      []txn.TopicPartition
	// Add (transaction version 2, KIP-890 part 2: Produce v12 and
	// TxnOffsetCommit v5) asks the coordinator to add the partitions to
	// the producer's transaction instead of only verifying them.
	Add  bool
	Done func([]error)
	// StartMs is when the verification was first asked (Verify sets it
	// when zero); a retried add keeps it.
	StartMs int64
}

// Retry is an add to ask again: the wrapper calls Verify with V after
// AfterMs (its coordinator looked up again then).
type Retry struct {
	V       Verification
	AfterMs int64
}

// Completion is a verification's answer; the wrapper calls Done(Errs)
// outside its locks.
type Completion struct {
	Done func([]error)
	Errs []error
}

// Send is a request to send to coordinator Node; its answer (or the
// transport's error) goes back with Answered(Node, ID, ...).
type Send struct {
	Node    int32
	ID      uint64
	Request *kmsg.AddPartitionsToTxnRequest
}

// Ready is what to do after a call. Run the Completions, in order, before
// starting the Sends: a Send may carry a later verification of a producer
// whose earlier one completes here, and the earlier produce's append must
// come first (its batch has the lower sequence; appended after the later
// one's, it would be refused with OUT_OF_ORDER_SEQUENCE_NUMBER, and a
// transactional producer then aborts its transaction).
type Ready struct {
	Sends       []Send
	Completions []Completion
	Retries     []Retry
}

// waiter is one Verify call within an entry.
type waiter struct {
	v     Verification
	parts []txn.TopicPartition
	done  func([]error)
}

// entry is one transactional id's share of a request: the union of its
// waiters' partitions.
type entry struct {
	id      string
	pid     int64
	epoch   int16
	adding  bool
	parts   []txn.TopicPartition
	has     map[txn.TopicPartition]bool
	waiters []waiter
}

// coordinator is one coordinator's queue: the entries waiting, in
// arrival order, and the request in flight.
type coordinator struct {
	waiting  []*entry
	inflight map[string]*entry // by transactional id; nil when none in flight
	sentID   uint64
}

// Manager batches verifications per coordinator.
type Manager struct {
	cfg    Config
	coords map[int32]*coordinator
	nextID uint64
}

// New returns a Manager; zero limits take the defaults.
func New(cfg Config) *Manager {
	if cfg.MaxWaitingPerCoordinator <= 0 {
		cfg.MaxWaitingPerCoordinator = DefaultMaxWaitingPerCoordinator
	}
	if cfg.MaxPartitionsPerTxn <= 0 {
		cfg.MaxPartitionsPerTxn = DefaultMaxPartitionsPerTxn
	}
	cfg.AddRetryBackoffMs = max(cfg.AddRetryBackoffMs, 1)
	cfg.AddRetryMaxMs = max(cfg.AddRetryMaxMs, 0)
	return &Manager{cfg: cfg, coords: map[int32]*coordinator{}}
}

// CoordinatorFor is the broker that coordinates transactional id in the
// image: the leader of its __transaction_state partition, if that is a
// registered, unfenced broker. Else COORDINATOR_NOT_AVAILABLE, as Kafka's
// manager answers (a missing topic means no transaction was ever begun).
func CoordinatorFor(im *metadata.Image, id string) (int32, error) {
	t, ok := im.Topic(TransactionStateTopic)
	if !ok || len(t.Partitions) == 0 {
		return -1, fmt.Errorf("%w: %s does not exist", kerr.CoordinatorNotAvailable, TransactionStateTopic)
	}
	p := t.Partitions[txn.PartitionFor(id, int32(len(t.Partitions)))]
	if b, ok := im.Broker(p.Leader); p.Leader < 0 || !ok || b.Fenced {
		return -1, fmt.Errorf("%w: partition %d of %s has no live leader", kerr.CoordinatorNotAvailable, p.Index, TransactionStateTopic)
	}
	return p.Leader, nil
}

// Waiting is how many transactional ids wait or are in flight, over all
// coordinators (a gauge, and the simulator's bound check).
func (m *Manager) Waiting() int {
	n := 0
	for _, c := range m.coords {
		n += len(c.waiting) + len(c.inflight)
	}
	return n
}

func fill(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// Verify queues v for coordinator node (from CoordinatorFor; a
// lookupErr fails v at once with it) and sends at once if nothing is in
// flight to that coordinator. nowMs is the wrapper's clock.
func (m *Manager) Verify(v Verification, node int32, lookupErr error, nowMs int64) Ready {
	var rd Ready
	if v.StartMs == 0 {
		v.StartMs = nowMs
	}
	fail := func(err error) Ready {
		rd.Completions = append(rd.Completions, Completion{Done: v.Done, Errs: fill(len(v.Partitions), err)})
		return rd
	}
	if lookupErr != nil {
		return fail(lookupErr)
	}
	if len(v.Partitions) == 0 {
		rd.Completions = append(rd.Completions, Completion{Done: v.Done, Errs: nil})
		return rd
	}
	c := m.coords[node]
	if c == nil {
		c = &coordinator{}
		m.coords[node] = c
	}
	i := slices.IndexFunc(c.waiting, func(e *entry) bool { return e.id == v.TransactionalID })
	if i >= 0 {
		e := c.waiting[i]
		switch {
		case e.pid == v.ProducerID && e.epoch == v.Epoch && e.adding != v.Add:
			// The same producer verifying and adding at once: not a
			// client's doing; retried (NOT_ENOUGH_REPLICAS on a produce).
			return fail(fmt.Errorf("%w: %q is both verified and added at epoch %d", kerr.ConcurrentTransactions, v.TransactionalID, v.Epoch))
		case e.pid == v.ProducerID && e.epoch == v.Epoch:
			if len(e.parts)+len(v.Partitions) > m.cfg.MaxPartitionsPerTxn {
				return fail(fmt.Errorf("%w: %d partitions wait for verification of %q", kerr.CoordinatorNotAvailable, len(e.parts), v.TransactionalID))
			}
			e.add(v)
			return rd
		case v.Epoch < e.epoch:
			return fail(fmt.Errorf("%w: epoch %d of %q is older than the %d being verified", kerr.InvalidProducerEpoch, v.Epoch, v.TransactionalID, e.epoch))
		default:
			// A newer epoch (or another producer id, after InitProducerId
			// rotated it): the waiting one is stale.
			for _, w := range e.waiters {
				rd.Completions = append(rd.Completions, Completion{Done: w.done, Errs: fill(len(w.parts),
					fmt.Errorf("%w: a newer epoch of %q is being verified", kerr.InvalidProducerEpoch, v.TransactionalID))})
			}
			c.waiting = slices.Delete(c.waiting, i, i+1)
		}
	}
	if len(c.waiting) >= m.cfg.MaxWaitingPerCoordinator {
		return fail(fmt.Errorf("%w: %d transactions wait for verification at broker %d", kerr.CoordinatorNotAvailable, len(c.waiting), node))
	}
	if len(v.Partitions) > m.cfg.MaxPartitionsPerTxn {
		return fail(fmt.Errorf("%w: %d partitions to verify for %q", kerr.CoordinatorNotAvailable, len(v.Partitions), v.TransactionalID))
	}
	e := &entry{id: v.TransactionalID, pid: v.ProducerID, epoch: v.Epoch, adding: v.Add, has: map[txn.TopicPartition]bool{}}
	e.add(v)
	c.waiting = append(c.waiting, e)
	m.maybeSend(node, c, &rd)
	return rd
}

func (e *entry) add(v Verification) {
	for _, tp := range v.Partitions {
		if !e.has[tp] {
			e.has[tp] = true
			e.parts = append(e.parts, tp)
		}
	}
	e.waiters = append(e.waiters, waiter{v: v, parts: v.Partitions, done: v.Done})
}

// maybeSend sends c's waiting entries as one request if none is in
// flight.
func (m *Manager) maybeSend(node int32, c *coordinator, rd *Ready) {
	if c.inflight != nil || len(c.waiting) == 0 {
		return
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(RequestVersion)
	c.inflight = make(map[string]*entry, len(c.waiting))
	for _, e := range c.waiting {
		if e.adding {
			req.SetVersion(AddRequestVersion)
		}
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = e.id, e.pid, e.epoch, !e.adding
		for _, tp := range e.parts {
			if n := len(t.Topics); n == 0 || t.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				rt.Topic = tp.Topic
				t.Topics = append(t.Topics, rt)
			}
			last := &t.Topics[len(t.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
		req.Transactions = append(req.Transactions, t)
		c.inflight[e.id] = e
	}
	c.waiting = nil
	m.nextID++
	c.sentID = m.nextID
	rd.Sends = append(rd.Sends, Send{Node: node, ID: c.sentID, Request: req})
}

// Answered completes the request id sent to node with the coordinator's
// response, or the transport's error (a lost connection, a timeout), and
// sends the next request to that coordinator if entries wait. An answer
// to a request no longer in flight is ignored. An add answered
// CONCURRENT_TRANSACTIONS for all its partitions is retried while it is
// younger than AddRetryMaxMs at nowMs.
func (m *Manager) Answered(node int32, id uint64, resp *kmsg.AddPartitionsToTxnResponse, transportErr error, nowMs int64) Ready {
	var rd Ready
	c := m.coords[node]
	if c == nil || c.inflight == nil || c.sentID != id {
		return rd
	}
	inflight := c.inflight
	c.inflight = nil
	codes := answerCodes(resp, transportErr)
	ids := make([]string, 0, len(inflight))
	for id := range inflight {
		ids = append(ids, id)
	}
	slices.Sort(ids) // deterministic completion order
	for _, id := range ids {
		e := inflight[id]
		for _, w := range e.waiters {
			errs := make([]error, len(w.parts))
			for i, tp := range w.parts {
				errs[i] = codes(e.id, tp)
			}
			if m.retryAdd(w.v, errs, nowMs) {
				rd.Retries = append(rd.Retries, Retry{V: w.v, AfterMs: m.cfg.AddRetryBackoffMs})
				continue
			}
			rd.Completions = append(rd.Completions, Completion{Done: w.done, Errs: errs})
		}
	}
	m.maybeSend(node, c, &rd)
	if c.inflight == nil && len(c.waiting) == 0 {
		delete(m.coords, node)
	}
	return rd
}

// retryAdd reports whether the add v, answered errs, is asked again:
// every partition CONCURRENT_TRANSACTIONS and time left before
// AddRetryMaxMs (the next attempt's backoff included).
func (m *Manager) retryAdd(v Verification, errs []error, nowMs int64) bool {
	if !v.Add || len(errs) == 0 || nowMs+m.cfg.AddRetryBackoffMs-v.StartMs > m.cfg.AddRetryMaxMs {
		return false
	}
	for _, err := range errs {
		if !errors.Is(err, kerr.ConcurrentTransactions) {
			return false
		}
	}
	return true
}

// answerCodes maps a coordinator's answer to each partition's outcome,
// as Kafka's AddPartitionsToTxnManager does: a transport failure is
// NETWORK_EXCEPTION for all; a top-level error is every partition's
// (CLUSTER_AUTHORIZATION_FAILED becomes INVALID_TXN_STATE: the client
// must not see the brokers' authorization); a partition's
// PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH, which producers expect
// from Produce. A transaction or partition the answer leaves out was not
// verified: NETWORK_EXCEPTION (Kafka would count it verified; we do not
// append on a missing answer).
func answerCodes(resp *kmsg.AddPartitionsToTxnResponse, transportErr error) func(id string, tp txn.TopicPartition) error {
	if transportErr != nil {
		err := fmt.Errorf("%w: verifying with the transaction coordinator: %v", kerr.NetworkException, transportErr)
		return func(string, txn.TopicPartition) error { return err }
	}
	if resp.ErrorCode != 0 {
		code := resp.ErrorCode
		if code == kerr.ClusterAuthorizationFailed.Code {
			code = kerr.InvalidTxnState.Code
		}
		err := kerr.ErrorForCode(code)
		return func(string, txn.TopicPartition) error { return err }
	}
	type key struct {
		id string
		tp txn.TopicPartition
	}
	got := map[key]int16{}
	for _, t := range resp.Transactions {
		for _, rt := range t.Topics {
			for _, p := range rt.Partitions {
				got[key{t.TransactionalID, txn.TopicPartition{Topic: rt.Topic, Partition: p.Partition}}] = p.ErrorCode
			}
		}
	}
	return func(id string, tp txn.TopicPartition) error {
		code, ok := got[key{id, tp}]
		switch {
		case !ok:
			return fmt.Errorf("%w: the coordinator did not answer for %s-%d of %q", kerr.NetworkException, tp.Topic, tp.Partition, id)
		case code == 0:
			return nil
		case code == kerr.ProducerFenced.Code:
			code = kerr.InvalidProducerEpoch.Code
		case code == kerr.TransactionAbortable.Code:
			// A v5 coordinator's "not in the transaction"; the
			// produce answers it by its own version (ProduceError).
			code = kerr.InvalidTxnState.Code
		}
		return kerr.ErrorForCode(code)
	}
}

// OffsetCommitError is what a TxnOffsetCommit of version answers when
// the verification of its __consumer_offsets partition ended with err, as
// Kafka's GroupMetadataManager.maybeConvertOffsetCommitError converts it
// (INVALID_TXN_STATE is TRANSACTION_ABORTABLE from v4):
// NETWORK_EXCEPTION becomes COORDINATOR_LOAD_IN_PROGRESS (retried without
// a coordinator lookup), UNKNOWN_TOPIC_OR_PARTITION and NOT_ENOUGH_REPLICAS
// COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR
// NOT_COORDINATOR; anything else (INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH,
// CONCURRENT_TRANSACTIONS) as it is.
func OffsetCommitError(err error, version int16) error {
	var ke *kerr.Error
	if err == nil || !errors.As(err, &ke) {
		return err
	}
	switch ke.Code {
	case kerr.InvalidTxnState.Code:
		if version >= abortableTxnOffsetCommitVersion {
			return fmt.Errorf("%w: %v", kerr.TransactionAbortable, err)
		}
	case kerr.NetworkException.Code:
		return fmt.Errorf("%w: %v", kerr.CoordinatorLoadInProgress, err)
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return fmt.Errorf("%w: %v", kerr.NotCoordinator, err)
	}
	return err
}

// Versions from which a verification's "not in the transaction" is
// TRANSACTION_ABORTABLE (KIP-890's error 120, which these clients abort
// on) rather than INVALID_TXN_STATE, as Kafka's AddPartitionsToTxnManager
// answers them (its genericErrorSupported and addPartition operations).
const (
	abortableProduceVersion         = 11
	abortableTxnOffsetCommitVersion = 4
)

// ProduceError is what a produce of version answers for a partition
// whose verification ended with err, as Kafka's ReplicaManager maps it:
// INVALID_TXN_STATE says the partition was not added to the transaction
// (TRANSACTION_ABORTABLE from Produce v11);
// the coordinator's retriable errors (CONCURRENT_TRANSACTIONS,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
// NOT_COORDINATOR) become NOT_ENOUGH_REPLICAS, which every client retries
// without a metadata refresh (older clients do not retry the
// coordinator's codes on a produce); anything else is answered as it is.
func ProduceError(err error, version int16) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err
	}
	switch ke.Code {
	case kerr.InvalidTxnState.Code:
		if version >= abortableProduceVersion {
			return fmt.Errorf("%w: partition was not added to the transaction", kerr.TransactionAbortable)
		}
		return fmt.Errorf("%w: partition was not added to the transaction", kerr.InvalidTxnState)
	case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return fmt.Errorf("%w: unable to verify the partition has been added to the transaction: %v", kerr.NotEnoughReplicas, err)
	}
	return err
}
