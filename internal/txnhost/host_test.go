package txnhost

import (
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/txn"
	"github.com/skein-log/skein/internal/vfs"
)

// testHandle is the smallest runtime around a Host: one goroutine, the
// time set by the test, records appended to a real log, outcomes held
// until the test reports them.
type testHandle struct {
	t       *testing.T
	host    *Host
	log     *storage.Log
	now     int64
	pending []Write
	markers []Markers
	reloads []error
	retryAt int64
}

func (h *testHandle) Do(op func(h *Host, now int64) (Ready, error)) error {
	rd, err := op(h.host, h.now)
	if err != nil {
		return err
	}
	h.carry(rd)
	return nil
}

func (h *testHandle) Writable() error { return nil }

func (h *testHandle) carry(rd Ready) {
	for _, w := range rd.Writes {
		if w.Records != nil {
			kvs := make([]batch.KeyValue, len(w.Records))
			for i, r := range w.Records {
				kvs[i] = batch.KeyValue{Key: r.Key, Value: r.Value}
			}
			if _, err := h.log.Append(batch.BuildKeyed(kvs, h.now), 0, h.now); err != nil {
				h.t.Fatal(err)
			}
		}
		h.pending = append(h.pending, w)
	}
	h.markers = append(h.markers, rd.Markers...)
	h.retryAt = txn.EarlierRetry(h.retryAt, rd.RetryAt)
	if rd.Reload != nil {
		h.reloads = append(h.reloads, rd.Reload)
	}
	for _, send := range rd.Send {
		send()
	}
}

func (h *testHandle) completeAll(err error) {
	for len(h.pending) > 0 {
		w := h.pending[0]
		h.pending = h.pending[1:]
		h.carry(h.host.Written(h.now, w.ID, err))
	}
}

type testHosts struct{ h *testHandle }

func (x testHosts) For(string) (Handle, error)            { return x.h, nil }
func (x testHosts) All() ([]Handle, error)                { return []Handle{x.h}, nil }
func (testHosts) EnsureTransactionTopic(done func(error)) { done(nil) }

func openLog(t *testing.T) *storage.Log {
	t.Helper()
	l, err := storage.Open(vfs.NewMem(), "/p", storage.DefaultConfig(), storage.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// load replays log into a new Host in epoch; the replayed tail is left
// pending (not yet committed).
func load(t *testing.T, log *storage.Log, epoch int32) *testHandle {
	t.Helper()
	l, err := Replay(txn.DefaultConfig(), log, "__transaction_state-0")
	if err != nil {
		t.Fatal(err)
	}
	h := &testHandle{t: t, host: New("__transaction_state-0", epoch), log: log, now: 1000}
	h.carry(h.host.Activate(l))
	return h
}

func backend(h *testHandle) Backend {
	next := int64(100)
	return Backend{Hosts: testHosts{h}, AllocateProducerID: func() (int64, error) { next++; return next, nil }}
}

func initTxn(t *testing.T, b Backend, h *testHandle, id string) txn.InitResult {
	t.Helper()
	var got *txn.InitResult
	b.InitProducerID(txn.InitRequest{TransactionalID: id, TimeoutMs: 60_000, ProducerID: -1, Epoch: -1}, func(r txn.InitResult) { got = &r })
	if got != nil {
		t.Fatalf("InitProducerID answered %+v before its write committed", *got)
	}
	h.completeAll(nil)
	if got == nil || got.Err != nil {
		t.Fatalf("InitProducerID: %+v", got)
	}
	return *got
}

func TestServesOnlyOnceTheLoadedLogIsCommitted(t *testing.T) {
	h := load(t, openLog(t), 3)
	b := backend(h)
	var got error = errors.New("unanswered")
	b.EndTxn("a", 1, 0, true, func(err error) { got = err })
	if !errors.Is(got, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("before the load committed: %v", got)
	}
	h.completeAll(nil)
	b.EndTxn("a", 1, 0, true, func(err error) { got = err })
	if !errors.Is(got, kerr.InvalidProducerIDMapping) {
		t.Fatalf("after: %v", got)
	}
}

func TestCommitAnswersAfterPrepareAndCompletesAfterMarkers(t *testing.T) {
	log := openLog(t)
	h := load(t, log, 3)
	h.completeAll(nil)
	b := backend(h)
	r := initTxn(t, b, h, "a")
	if r.ProducerID != 101 || r.Epoch != 0 {
		t.Fatalf("init: %+v", r)
	}
	var got []error
	b.AddPartitions("a", r.ProducerID, r.Epoch, []txn.TopicPartition{{Topic: "t", Partition: 0}}, func(err error) { got = append(got, err) })
	h.completeAll(nil)
	b.EndTxn("a", r.ProducerID, r.Epoch, true, func(err error) { got = append(got, err) })
	if len(got) != 1 || len(h.markers) != 0 {
		t.Fatalf("EndTxn answered (%v) or markers sent (%v) before PrepareCommit committed", got, h.markers)
	}
	h.completeAll(nil)
	if len(got) != 2 || got[0] != nil || got[1] != nil {
		t.Fatalf("answers %v", got)
	}
	if len(h.markers) != 1 || !h.markers[0].Commit || h.markers[0].CoordinatorEpoch != 3 || h.markers[0].ProducerID != r.ProducerID {
		t.Fatalf("markers %+v", h.markers)
	}
	// A coordinator that takes over now (the markers not yet delivered)
	// loads PrepareCommit and sends them again.
	h2 := load(t, log, 4)
	h2.completeAll(nil)
	if len(h2.markers) != 1 || h2.markers[0].CoordinatorEpoch != 4 || !h2.markers[0].Commit {
		t.Fatalf("the next coordinator resends %+v", h2.markers)
	}
	// A delivery of the old epoch does not complete the new coordinator's.
	h2.carry(h2.host.MarkersWritten(h2.now, h.markers[0]))
	if len(h2.pending) != 0 {
		t.Fatal("a stale coordinator's delivery completed the transaction")
	}
	h2.carry(h2.host.MarkersWritten(h2.now, h2.markers[0]))
	h2.completeAll(nil)
	d, err := backend(h2).DescribeTransaction("a")
	if err != nil || d.State != txn.CompleteCommit {
		t.Fatalf("after markers: %+v %v", d, err)
	}
	// And the log says so to the one after.
	h3 := load(t, log, 5)
	h3.completeAll(nil)
	if d, _ := backend(h3).DescribeTransaction("a"); d.State != txn.CompleteCommit || len(h3.markers) != 0 {
		t.Fatalf("third coordinator: %+v, markers %v", d, h3.markers)
	}
}

func TestFailedWriteAnswersAndReloads(t *testing.T) {
	h := load(t, openLog(t), 1)
	h.completeAll(nil)
	b := backend(h)
	var got *txn.InitResult
	b.InitProducerID(txn.InitRequest{TransactionalID: "a", TimeoutMs: 1000, ProducerID: -1, Epoch: -1}, func(r txn.InitResult) { got = &r })
	h.completeAll(kerr.RequestTimedOut)
	if got == nil || !errors.Is(got.Err, kerr.CoordinatorNotAvailable) || len(h.reloads) != 1 {
		t.Fatalf("answer %+v, reloads %v", got, h.reloads)
	}
	h2 := load(t, openLog(t), 1)
	h2.completeAll(nil)
	got = nil
	backend(h2).InitProducerID(txn.InitRequest{TransactionalID: "a", TimeoutMs: 1000, ProducerID: -1, Epoch: -1}, func(r txn.InitResult) { got = &r })
	h2.completeAll(kerr.NotLeaderForPartition)
	if got == nil || !errors.Is(got.Err, kerr.NotCoordinator) {
		t.Fatalf("lost leadership: %+v", got)
	}
}

// ongoing loads a coordinator in epoch 1 over an empty log and opens a
// transaction of id on t-0.
func ongoing(t *testing.T, id string) (*testHandle, Backend, txn.InitResult) {
	t.Helper()
	h := load(t, openLog(t), 1)
	h.completeAll(nil)
	b := backend(h)
	r := initTxn(t, b, h, id)
	b.AddPartitions(id, r.ProducerID, r.Epoch, []txn.TopicPartition{{Topic: "t", Partition: 0}}, func(error) {})
	h.completeAll(nil)
	return h, b, r
}

// A completion refused with NOT_ENOUGH_REPLICAS keeps the coordinator and
// asks to be retried after the coordinator's backoff, not at the next
// abort round; the retry writes it.
func TestRefusedCompletionRetriedAtRetryAt(t *testing.T) {
	h, b, r := ongoing(t, "a")
	b.EndTxn("a", r.ProducerID, r.Epoch, true, func(error) {})
	h.completeAll(nil)
	h.carry(h.host.MarkersWritten(h.now, h.markers[0]))
	h.completeAll(kerr.NotEnoughReplicas)
	if len(h.reloads) != 0 || h.retryAt != h.now+txn.DefaultConfig().RetryBackoffMs {
		t.Fatalf("after a refused completion: reloads %v, RetryAt %d (now %d)", h.reloads, h.retryAt, h.now)
	}
	if d, _ := b.DescribeTransaction("a"); d.State != txn.PrepareCommit {
		t.Fatalf("state %s, want PrepareCommit until the completion is written", d.State)
	}
	rd, err := h.host.AbortTimedOut(h.retryAt)
	if err != nil || len(rd.Writes) != 0 {
		t.Fatalf("the abort round wrote %d records (%v); the retry is RetryCompletions'", len(rd.Writes), err)
	}
	h.now, h.retryAt = h.retryAt, 0
	if err := h.Do(func(host *Host, now int64) (Ready, error) { return host.RetryCompletions(now) }); err != nil {
		t.Fatal(err)
	}
	if len(h.pending) != 1 {
		t.Fatalf("%d writes at RetryAt, want the completion", len(h.pending))
	}
	h.completeAll(nil)
	if d, _ := b.DescribeTransaction("a"); d.State != txn.CompleteCommit || h.retryAt != 0 {
		t.Fatalf("after the retry: %s, RetryAt %d", d.State, h.retryAt)
	}
}

func TestStoppedHostWritesNothingMore(t *testing.T) {
	h, b, r := ongoing(t, "a")
	var got error = errors.New("unanswered")
	b.EndTxn("a", r.ProducerID, r.Epoch, false, func(err error) { got = err })
	h.carry(h.host.Stop())
	h.completeAll(nil)
	if got != nil || len(h.markers) != 0 {
		t.Fatalf("after stop: answer %v, markers %v", got, h.markers)
	}
	if _, err := b.DescribeTransaction("a"); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("describe on a stopped host: %v", err)
	}
}

func TestMarkerOutcomes(t *testing.T) {
	for code, want := range map[int16]MarkerOutcome{
		0: MarkerDone, kerr.NotLeaderForPartition.Code: MarkerRetry, kerr.UnknownTopicOrPartition.Code: MarkerRetry,
		kerr.RequestTimedOut.Code: MarkerRetry, kerr.TransactionCoordinatorFenced.Code: MarkerFenced,
		kerr.InvalidProducerEpoch.Code: MarkerFenced, kerr.UnsupportedForMessageFormat.Code: MarkerDone,
	} {
		if got := MarkerOutcomeFor(code); got != want {
			t.Errorf("code %d: %v, want %v", code, got, want)
		}
	}
}

// commitMarkers ends the ongoing transaction of id with a commit and
// leaves it prepared: PrepareCommit committed, its markers not yet
// reported.
func commitMarkers(t *testing.T, h *testHandle, b Backend, r txn.InitResult, id string) Markers {
	t.Helper()
	var ended error = errors.New("unanswered")
	b.EndTxn(id, r.ProducerID, r.Epoch, true, func(err error) { ended = err })
	h.completeAll(nil)
	if ended != nil || len(h.markers) != 1 {
		t.Fatalf("EndTxn: %v, markers %v", ended, h.markers)
	}
	m := h.markers[0]
	h.markers = nil
	return m
}

// The next transaction's add, arriving while the previous one's markers
// are written, waits at the coordinator and goes through once the
// completion is committed, instead of CONCURRENT_TRANSACTIONS.
func TestAddHeldUntilThePreviousTransactionCompletes(t *testing.T) {
	h, b, r := ongoing(t, "a")
	m := commitMarkers(t, h, b, r, "a")
	var got []error
	b.AddPartitionsV2("a", r.ProducerID, r.Epoch, []txn.TopicPartition{{Topic: "t", Partition: 1}}, func(err error) { got = append(got, err) })
	if len(got) != 0 || h.host.Held() != 1 || h.retryAt != h.now+txn.DefaultHoldMs {
		t.Fatalf("while the markers are written: answers %v, held %d, RetryAt %d (now %d)", got, h.host.Held(), h.retryAt, h.now)
	}
	h.carry(h.host.MarkersWritten(h.now, m))
	if len(h.pending) != 1 || len(got) != 0 {
		t.Fatalf("after the markers: %d writes, answers %v; want the completion alone", len(h.pending), got)
	}
	h.completeAll(nil)
	if len(got) != 1 || got[0] != nil || h.host.Held() != 0 {
		t.Fatalf("after the completion: answers %v, held %d", got, h.host.Held())
	}
	d, _ := b.DescribeTransaction("a")
	if d.State != txn.Ongoing || len(d.Partitions) != 1 || d.Partitions[0].Partition != 1 {
		t.Fatalf("the held add: %+v", d)
	}
}

// A held add is answered CONCURRENT_TRANSACTIONS at its deadline when the
// change it waits for is not over by then (here the completion's write
// refused), as Kafka answers it at once; nothing was added.
func TestHeldAddAnsweredAtItsDeadline(t *testing.T) {
	h, b, r := ongoing(t, "a")
	m := commitMarkers(t, h, b, r, "a")
	var got error = errors.New("unanswered")
	b.AddPartitionsV2("a", r.ProducerID, r.Epoch, []txn.TopicPartition{{Topic: "t", Partition: 1}}, func(err error) { got = err })
	deadline := h.retryAt
	h.carry(h.host.MarkersWritten(h.now, m))
	h.completeAll(kerr.NotEnoughReplicas)
	if h.host.Held() != 1 || h.retryAt != h.now+txn.DefaultConfig().RetryBackoffMs {
		t.Fatalf("after a refused completion: held %d, RetryAt %d", h.host.Held(), h.retryAt)
	}
	h.now, h.retryAt = deadline-1, 0
	if err := h.Do(func(host *Host, now int64) (Ready, error) { return host.RetryCompletions(now) }); err != nil {
		t.Fatal(err)
	}
	// The completion is written again; the add is still held (its
	// deadline not yet reached) and waits for it.
	if h.host.Held() != 1 || len(h.pending) != 1 {
		t.Fatalf("before the deadline: held %d, writes %d", h.host.Held(), len(h.pending))
	}
	h.completeAll(kerr.NotEnoughReplicas)
	h.now, h.retryAt = deadline, 0
	if err := h.Do(func(host *Host, now int64) (Ready, error) { return host.RetryCompletions(now) }); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got, kerr.ConcurrentTransactions) || h.host.Held() != 0 {
		t.Fatalf("at the deadline: %v, held %d", got, h.host.Held())
	}
	if d, _ := b.DescribeTransaction("a"); d.State != txn.PrepareCommit {
		t.Fatalf("state %s", d.State)
	}
}

// Adds of one id from several partition leaders at once (a producer's
// first produces of a transaction) meet each other's writes: each waits
// for the one before, in arrival order, and all are answered.
func TestConcurrentAddsOfOneIDRunInOrder(t *testing.T) {
	h, b, r := ongoing(t, "a")
	var got []int32
	for p := int32(1); p <= 3; p++ {
		b.AddPartitionsV2("a", r.ProducerID, r.Epoch, []txn.TopicPartition{{Topic: "t", Partition: p}}, func(err error) {
			if err != nil {
				t.Errorf("add of t-%d: %v", p, err)
			}
			got = append(got, p)
		})
	}
	if len(h.pending) != 1 || h.host.Held() != 2 {
		t.Fatalf("%d writes, %d held; want the first add's write and the others held", len(h.pending), h.host.Held())
	}
	h.completeAll(nil)
	if !slices.Equal(got, []int32{1, 2, 3}) || h.host.Held() != 0 {
		t.Fatalf("answered %v, held %d", got, h.host.Held())
	}
	if d, _ := b.DescribeTransaction("a"); len(d.Partitions) != 4 {
		t.Fatalf("partitions %v", d.Partitions)
	}
}

// Only a version 2 add that meets a change in flight is held: not one
// failing otherwise, nor a version 1 client's add or end (whose epoch
// its next transaction shares).
func TestOnlyAChangeInFlightHolds(t *testing.T) {
	h, b, r := ongoing(t, "a")
	var got error = errors.New("unanswered")
	b.AddPartitionsV2("a", r.ProducerID, r.Epoch+1, []txn.TopicPartition{{Topic: "t", Partition: 1}}, func(err error) { got = err })
	if !errors.Is(got, kerr.ProducerFenced) || h.host.Held() != 0 {
		t.Fatalf("a fenced add: %v, held %d", got, h.host.Held())
	}
	commitMarkers(t, h, b, r, "a")
	b.EndTxn("a", r.ProducerID, r.Epoch, false, func(err error) { got = err })
	if !errors.Is(got, kerr.InvalidTxnState) || h.host.Held() != 0 {
		t.Fatalf("an abort of a transaction being committed: %v, held %d", got, h.host.Held())
	}
	b.AddPartitions("a", r.ProducerID, r.Epoch, []txn.TopicPartition{{Topic: "t", Partition: 1}}, func(err error) { got = err })
	if !errors.Is(got, kerr.ConcurrentTransactions) || h.host.Held() != 0 {
		t.Fatalf("a version 1 add while the markers are written: %v, held %d", got, h.host.Held())
	}
	b.EndTxn("a", r.ProducerID, r.Epoch, true, func(err error) { got = err })
	if !errors.Is(got, kerr.ConcurrentTransactions) || h.host.Held() != 0 {
		t.Fatalf("a version 1 end's retry while the markers are written: %v, held %d", got, h.host.Held())
	}
}

// Stopping the Host answers what it holds with NOT_COORDINATOR.
func TestStopAnswersHeldRequests(t *testing.T) {
	h, b, r := ongoing(t, "a")
	commitMarkers(t, h, b, r, "a")
	var got error = errors.New("unanswered")
	b.AddPartitionsV2("a", r.ProducerID, r.Epoch, []txn.TopicPartition{{Topic: "t", Partition: 1}}, func(err error) { got = err })
	h.carry(h.host.Stop())
	if !errors.Is(got, kerr.NotCoordinator) || h.host.Held() != 0 {
		t.Fatalf("after stop: %v, held %d", got, h.host.Held())
	}
}
