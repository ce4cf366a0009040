package txn

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// commit reports every write of out committed and returns what followed.
func commit(t *testing.T, c *Coordinator, now int64, out Output) Output {
	t.Helper()
	var next Output
	for _, w := range out.Writes {
		next.merge(c.Written(now, w, nil))
	}
	return next
}

func mustInit(t *testing.T, c *Coordinator, now int64, req InitRequest) InitResult {
	t.Helper()
	res, out := c.InitProducerID(now, req)
	if res.Err != nil {
		t.Fatalf("InitProducerID %+v: %v", req, res.Err)
	}
	if len(out.Writes) != 1 {
		t.Fatalf("InitProducerID %+v: %d writes, want 1", req, len(out.Writes))
	}
	commit(t, c, now, out)
	return res
}

func newReq(id string, pid int64) InitRequest {
	return InitRequest{TransactionalID: id, TimeoutMs: 60_000, ProducerID: -1, Epoch: -1, NewProducerID: pid}
}

var tp0 = TopicPartition{"t", 0}

func TestInitProducerIDNewAndFencing(t *testing.T) {
	c := New(DefaultConfig())
	if res, _ := c.InitProducerID(0, InitRequest{TransactionalID: "a", TimeoutMs: 1000, ProducerID: -1, Epoch: -1, NewProducerID: -1}); !errors.Is(res.Err, ErrNeedProducerID) {
		t.Fatalf("new id without a producer id: %v", res.Err)
	}
	r := mustInit(t, c, 1, newReq("a", 7))
	if r.ProducerID != 7 || r.Epoch != 0 {
		t.Fatalf("first init: %+v", r)
	}
	// A second producer with the same id bumps the epoch: the first is fenced.
	r2 := mustInit(t, c, 2, newReq("a", -1))
	if r2.ProducerID != 7 || r2.Epoch != 1 {
		t.Fatalf("second init: %+v", r2)
	}
	if _, err := c.AddPartitions(3, "a", 7, 0, []TopicPartition{tp0}); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("fenced producer adds partitions: %v", err)
	}
	if _, err := c.EndTxn(3, "a", 7, 0, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("fenced producer commits: %v", err)
	}
	if _, err := c.AddPartitions(3, "a", 8, 1, []TopicPartition{tp0}); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("wrong producer id: %v", err)
	}
	if _, err := c.AddPartitions(3, "nope", 7, 1, []TopicPartition{tp0}); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("unknown transactional id: %v", err)
	}
}

func TestInitProducerIDTimeout(t *testing.T) {
	c := New(Config{MaxTimeoutMs: 1000})
	for _, ms := range []int32{0, -1, 1001} {
		req := newReq("a", 1)
		req.TimeoutMs = ms
		if res, _ := c.InitProducerID(0, req); !errors.Is(res.Err, kerr.InvalidTransactionTimeout) {
			t.Errorf("timeout %d: %v", ms, res.Err)
		}
	}
	if res, _ := c.InitProducerID(0, InitRequest{TransactionalID: "", TimeoutMs: 10, ProducerID: -1, Epoch: -1, NewProducerID: 1}); !errors.Is(res.Err, kerr.InvalidRequest) {
		t.Errorf("empty id: %v", res.Err)
	}
}

func TestCommitFlow(t *testing.T) {
	c := New(DefaultConfig())
	r := mustInit(t, c, 1, newReq("a", 7))
	out, err := c.AddPartitions(2, "a", 7, r.Epoch, []TopicPartition{{"t", 1}, tp0})
	if err != nil || len(out.Writes) != 1 {
		t.Fatalf("add: %v, %d writes", err, len(out.Writes))
	}
	// While the write is in flight, everything else waits.
	if _, err := c.AddPartitions(2, "a", 7, r.Epoch, []TopicPartition{tp0}); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("add during a write: %v", err)
	}
	if res, _ := c.InitProducerID(2, newReq("a", -1)); !errors.Is(res.Err, kerr.ConcurrentTransactions) {
		t.Fatalf("init during a write: %v", res.Err)
	}
	commit(t, c, 2, out)
	// Partitions already in the transaction need no write.
	if out, err := c.AddPartitions(3, "a", 7, r.Epoch, []TopicPartition{tp0}); err != nil || len(out.Writes) != 0 {
		t.Fatalf("re-add: %v, %d writes", err, len(out.Writes))
	}
	if errs, err := c.VerifyPartitions("a", 7, r.Epoch, []TopicPartition{tp0, {"u", 0}}); err != nil || errs[0] != nil || !errors.Is(errs[1], kerr.InvalidTxnState) {
		t.Fatalf("verify: %v %v", errs, err)
	}
	out, err = c.EndTxn(4, "a", 7, r.Epoch, true)
	if err != nil || len(out.Writes) != 1 {
		t.Fatalf("end: %v", err)
	}
	m := commit(t, c, 4, out)
	if len(m.Markers) != 1 || !m.Markers[0].Commit || len(m.Markers[0].Partitions) != 2 {
		t.Fatalf("markers after PrepareCommit: %+v", m.Markers)
	}
	if d, _ := c.Describe("a"); d.State != PrepareCommit {
		t.Fatalf("state %s", d.State)
	}
	// A retried commit waits; an abort is refused.
	if _, err := c.EndTxn(5, "a", 7, r.Epoch, true); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("retried commit while prepared: %v", err)
	}
	if _, err := c.EndTxn(5, "a", 7, r.Epoch, false); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("abort while committing: %v", err)
	}
	commit(t, c, 6, c.MarkersWritten(6, m.Markers[0]))
	d, _ := c.Describe("a")
	if d.State != CompleteCommit || len(d.Partitions) != 0 || d.Epoch != r.Epoch {
		t.Fatalf("after markers: %+v", d)
	}
	if out, err := c.EndTxn(7, "a", 7, r.Epoch, true); err != nil || len(out.Writes) != 0 {
		t.Fatalf("retried commit after completion: %v", err)
	}
	if _, err := c.EndTxn(7, "a", 7, r.Epoch, false); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("abort after commit: %v", err)
	}
	// A new transaction after a completed one.
	out, err = c.AddPartitions(8, "a", 7, r.Epoch, []TopicPartition{tp0})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, 8, out)
	if d, _ := c.Describe("a"); d.State != Ongoing || d.StartMs != 8 {
		t.Fatalf("second transaction: %+v", d)
	}
}

func TestEndTxnOfEmptyIsInvalid(t *testing.T) {
	c := New(DefaultConfig())
	r := mustInit(t, c, 1, newReq("a", 7))
	if _, err := c.EndTxn(2, "a", 7, r.Epoch, true); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("commit without a transaction: %v", err)
	}
}

func TestEmptyTransactionCompletesWithoutMarkers(t *testing.T) {
	c := New(DefaultConfig())
	r := mustInit(t, c, 1, newReq("a", 7))
	e := c.txns["a"]
	// A transaction can be Ongoing with no partitions only through a
	// record replayed from another coordinator; completing it must not
	// ask for markers to nowhere.
	e.cur.State = Ongoing
	out, err := c.EndTxn(2, "a", 7, r.Epoch, false)
	if err != nil {
		t.Fatal(err)
	}
	next := commit(t, c, 2, out)
	if len(next.Markers) != 0 || len(next.Writes) != 1 {
		t.Fatalf("after PrepareAbort with no partitions: %+v", next)
	}
	commit(t, c, 2, next)
	if d, _ := c.Describe("a"); d.State != CompleteAbort {
		t.Fatalf("state %s", d.State)
	}
}

func TestInitDuringOngoingFencesAndAborts(t *testing.T) {
	c := New(DefaultConfig())
	r := mustInit(t, c, 1, newReq("a", 7))
	out, _ := c.AddPartitions(2, "a", 7, r.Epoch, []TopicPartition{tp0})
	commit(t, c, 2, out)
	res, out := c.InitProducerID(3, newReq("a", -1))
	if !errors.Is(res.Err, kerr.ConcurrentTransactions) || len(out.Writes) != 1 {
		t.Fatalf("init during a transaction: %v, %d writes", res.Err, len(out.Writes))
	}
	m := commit(t, c, 3, out)
	d, _ := c.Describe("a")
	if d.State != PrepareAbort || d.Epoch != 1 || len(m.Markers) != 1 || m.Markers[0].Commit || m.Markers[0].Epoch != 1 {
		t.Fatalf("fenced abort: %+v, markers %+v", d, m.Markers)
	}
	// The old producer can no longer commit.
	if _, err := c.EndTxn(4, "a", 7, 0, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("fenced commit: %v", err)
	}
	commit(t, c, 4, c.MarkersWritten(4, m.Markers[0]))
	r2 := mustInit(t, c, 5, newReq("a", -1))
	if r2.ProducerID != 7 || r2.Epoch != 2 {
		t.Fatalf("retried init: %+v", r2)
	}
}

func TestKIP360EpochBump(t *testing.T) {
	c := New(DefaultConfig())
	r := mustInit(t, c, 1, newReq("a", 7))
	// The producer recovers from an abortable error with its id and epoch.
	req := newReq("a", -1)
	req.ProducerID, req.Epoch = 7, r.Epoch
	r2 := mustInit(t, c, 2, req)
	if r2.ProducerID != 7 || r2.Epoch != r.Epoch+1 {
		t.Fatalf("bump: %+v", r2)
	}
	// The same request retried (its answer was lost): the same epoch back.
	r3 := mustInit(t, c, 3, req)
	if r3 != r2 {
		t.Fatalf("retried bump: %+v, want %+v", r3, r2)
	}
	// An older epoch is fenced.
	req.Epoch = 5
	if res, _ := c.InitProducerID(4, req); !errors.Is(res.Err, kerr.ProducerFenced) {
		t.Fatalf("stale epoch: %v", res.Err)
	}
	// Another producer id is fenced.
	req.ProducerID, req.Epoch = 99, 0
	if res, _ := c.InitProducerID(4, req); !errors.Is(res.Err, kerr.ProducerFenced) {
		t.Fatalf("other producer id: %v", res.Err)
	}
}

func TestEpochExhaustionRotatesProducerID(t *testing.T) {
	c := New(DefaultConfig())
	mustInit(t, c, 1, newReq("a", 7))
	c.txns["a"].cur.Epoch = math.MaxInt16 - 1
	if res, _ := c.InitProducerID(2, newReq("a", -1)); !errors.Is(res.Err, ErrNeedProducerID) {
		t.Fatalf("exhausted epoch without a new id: %v", res.Err)
	}
	req := newReq("a", 8)
	req.ProducerID, req.Epoch = 7, math.MaxInt16-1
	r := mustInit(t, c, 2, req)
	if r.ProducerID != 8 || r.Epoch != 0 {
		t.Fatalf("rotation: %+v", r)
	}
	d, _ := c.Describe("a")
	if d.PrevProducerID != 7 {
		t.Fatalf("previous producer id %d", d.PrevProducerID)
	}
	// The rotation retried with the old id and exhausted epoch is no fencing.
	req.NewProducerID = -1
	if res, _ := c.InitProducerID(3, req); res.Err != nil && errors.Is(res.Err, kerr.ProducerFenced) {
		t.Fatalf("retried rotation fenced: %v", res.Err)
	}
}

func TestAbortTimedOut(t *testing.T) {
	c := New(DefaultConfig())
	req := newReq("a", 7)
	req.TimeoutMs = 100
	r := mustInit(t, c, 0, req)
	out, _ := c.AddPartitions(10, "a", 7, r.Epoch, []TopicPartition{tp0})
	commit(t, c, 10, out)
	if out := c.AbortTimedOut(110); len(out.Writes) != 0 {
		t.Fatal("aborted at its timeout, not past it")
	}
	out = c.AbortTimedOut(111)
	if len(out.Writes) != 1 {
		t.Fatalf("not aborted past its timeout")
	}
	m := commit(t, c, 111, out)
	if len(m.Markers) != 1 || m.Markers[0].Commit || m.Markers[0].Epoch != r.Epoch+1 {
		t.Fatalf("markers %+v", m.Markers)
	}
	if _, err := c.EndTxn(112, "a", 7, r.Epoch, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("timed-out producer commits: %v", err)
	}
}

func TestFailedFenceDoesNotBumpTwice(t *testing.T) {
	c := New(DefaultConfig())
	r := mustInit(t, c, 0, newReq("a", 7))
	out, _ := c.AddPartitions(0, "a", 7, r.Epoch, []TopicPartition{tp0})
	commit(t, c, 0, out)
	out = c.AbortTimedOut(math.MaxInt32)
	c.Written(1, out.Writes[0], kerr.NotEnoughReplicas)
	if d, _ := c.Describe("a"); d.State != Ongoing || d.Epoch != r.Epoch {
		t.Fatalf("a failed write took effect: %+v", d)
	}
	out = c.AbortTimedOut(math.MaxInt32)
	commit(t, c, 2, out)
	if d, _ := c.Describe("a"); d.Epoch != r.Epoch {
		t.Fatalf("epoch %d after a failed fence and a second one, want %d (Kafka's hasFailedEpochFence)", d.Epoch, r.Epoch)
	}
}

// A completion whose write was refused with nothing written (the
// coordinator stays) is written again by RetryCompletions, and only then:
// not while the markers or the write are in flight, not once completed.
func TestRetryCompletions(t *testing.T) {
	c := New(DefaultConfig())
	r := mustInit(t, c, 1, newReq("a", 7))
	out, _ := c.AddPartitions(2, "a", 7, r.Epoch, []TopicPartition{tp0})
	commit(t, c, 2, out)
	out, _ = c.EndTxn(3, "a", 7, r.Epoch, true)
	m := commit(t, c, 3, out)
	if out := c.RetryCompletions(4); len(out.Writes) != 0 {
		t.Fatal("a completion written while the markers are in flight")
	}
	done := c.MarkersWritten(4, m.Markers[0])
	if out := c.RetryCompletions(4); len(out.Writes) != 0 {
		t.Fatal("a completion written again while its write is in flight")
	}
	failed := c.Written(5, done.Writes[0], kerr.NotEnoughReplicas)
	if d, _ := c.Describe("a"); d.State != PrepareCommit {
		t.Fatalf("a failed completion took effect: %+v", d)
	}
	if failed.RetryAt != 5+50 {
		t.Fatalf("RetryAt %d after the first failure at 5, want 55 (RetryBackoffMs 50)", failed.RetryAt)
	}
	if _, err := c.EndTxn(5, "a", 7, r.Epoch, true); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("retried commit while the completion is unwritten: %v", err)
	}
	if early := c.RetryCompletions(54); len(early.Writes) != 0 || early.RetryAt != 55 {
		t.Fatalf("retry before the backoff: %d writes, RetryAt %d; want none and 55", len(early.Writes), early.RetryAt)
	}
	retry := c.RetryCompletions(55)
	if len(retry.Writes) != 1 || len(retry.Markers) != 0 || retry.RetryAt != 0 {
		t.Fatalf("retry: %d writes, %d marker deliveries, RetryAt %d; want the completion's write alone", len(retry.Writes), len(retry.Markers), retry.RetryAt)
	}
	commit(t, c, 55, retry)
	if d, _ := c.Describe("a"); d.State != CompleteCommit || len(d.Partitions) != 0 {
		t.Fatalf("after the retried completion: %+v", d)
	}
	if out := c.RetryCompletions(10_000); len(out.Writes) != 0 || out.RetryAt != 0 {
		t.Fatal("a completed transaction's completion written again")
	}
}

// The backoff doubles with each failure in a row up to RetryBackoffMaxMs,
// and starts again from RetryBackoffMs after a completion is written.
func TestRetryCompletionsBackoff(t *testing.T) {
	c := New(DefaultConfig())
	prepared := func(now int64, id string, pid int64) *Write {
		r := mustInit(t, c, now, newReq(id, pid))
		out, _ := c.AddPartitions(now, id, pid, r.Epoch, []TopicPartition{tp0})
		commit(t, c, now, out)
		out, _ = c.EndTxn(now, id, pid, r.Epoch, false)
		m := commit(t, c, now, out)
		return c.MarkersWritten(now, m.Markers[0]).Writes[0]
	}
	w := prepared(0, "a", 7)
	now := int64(100)
	var waits []int64
	for range 8 {
		out := c.Written(now, w, kerr.NotEnoughReplicas)
		waits = append(waits, out.RetryAt-now)
		now = out.RetryAt
		retry := c.RetryCompletions(now)
		if len(retry.Writes) != 1 {
			t.Fatalf("at %d: %d writes, want the completion", now, len(retry.Writes))
		}
		w = retry.Writes[0]
	}
	if want := []int64{50, 100, 200, 400, 800, 1600, 2000, 2000}; !slices.Equal(waits, want) {
		t.Fatalf("backoffs %v, want %v", waits, want)
	}
	// Another id's failure meanwhile: the earlier of the two is next.
	w2 := prepared(now, "b", 8)
	second := c.Written(now, w2, kerr.NotEnoughReplicas)
	if second.RetryAt != now+50 {
		t.Fatalf("b's RetryAt %d, want %d", second.RetryAt, now+50)
	}
	c.Written(now, w, kerr.NotEnoughReplicas) // a: 2000 again
	if out := c.RetryCompletions(now + 1); len(out.Writes) != 0 || out.RetryAt != now+50 {
		t.Fatalf("two waiting: %d writes, RetryAt %d; want none and %d", len(out.Writes), out.RetryAt, now+50)
	}
	out := c.RetryCompletions(now + 50)
	if len(out.Writes) != 1 || out.Writes[0].TransactionalID() != "b" || out.RetryAt != now+2000 {
		t.Fatalf("at b's retry: %d writes, RetryAt %d; want b's and %d", len(out.Writes), out.RetryAt, now+2000)
	}
	commit(t, c, now+50, out)
	out = c.RetryCompletions(now + 2000)
	commit(t, c, now+2000, out)
	if d, _ := c.Describe("a"); d.State != CompleteAbort {
		t.Fatalf("a: %+v", d)
	}
	// a's next failure starts the backoff again.
	w = prepared(now+3000, "a", 7)
	if out := c.Written(now+3000, w, kerr.NotEnoughReplicas); out.RetryAt != now+3050 {
		t.Fatalf("after a success: RetryAt %d, want %d", out.RetryAt, now+3050)
	}
}

func TestFailedCreationForgetsTheID(t *testing.T) {
	c := New(DefaultConfig())
	_, out := c.InitProducerID(0, newReq("a", 7))
	c.Written(0, out.Writes[0], kerr.NotLeaderForPartition)
	if _, ok := c.Describe("a"); ok {
		t.Fatal("an id whose creation failed is still held")
	}
}

func TestExpireTransactionalIDs(t *testing.T) {
	c := New(Config{MaxTimeoutMs: 100_000, ExpirationMs: 100})
	r := mustInit(t, c, 0, newReq("a", 7))
	mustInit(t, c, 0, newReq("b", 8))
	out, _ := c.AddPartitions(50, "b", 8, 0, []TopicPartition{tp0})
	commit(t, c, 50, out)
	out = c.ExpireTransactionalIDs(100)
	if len(out.Writes) != 1 || out.Writes[0].Record.Value != nil || out.Writes[0].TransactionalID() != "a" {
		t.Fatalf("expiry: %+v", out.Writes)
	}
	if _, err := c.AddPartitions(100, "a", 7, r.Epoch, []TopicPartition{tp0}); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("add while the tombstone is written: %v", err)
	}
	commit(t, c, 100, out)
	if _, ok := c.Describe("a"); ok {
		t.Fatal("expired id still held")
	}
	if _, ok := c.Describe("b"); !ok {
		t.Fatal("id with an open transaction expired")
	}
}

func TestReplayRebuildsAndResumesMarkers(t *testing.T) {
	c := New(Config{MaxTimeoutMs: 100_000, ExpirationMs: 100})
	var log []Record
	record := func(out Output) Output {
		for _, w := range out.Writes {
			log = append(log, w.Record)
		}
		return commit(t, c, 5, out)
	}
	_, out := c.InitProducerID(1, newReq("gone", 9))
	record(out)
	record(c.ExpireTransactionalIDs(101))
	res, out := c.InitProducerID(200, newReq("a", 7))
	record(out)
	_, out = c.InitProducerID(200, newReq("b", 8))
	record(out)
	out, _ = c.AddPartitions(201, "a", 7, res.Epoch, []TopicPartition{tp0, {"u", 3}})
	record(out)
	out, _ = c.EndTxn(202, "a", 7, res.Epoch, true)
	record(out)

	r := New(DefaultConfig())
	for _, rec := range log {
		if err := r.Apply(rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := r.Describe("gone"); ok {
		t.Fatal("replay kept an expired id")
	}
	a, _ := c.Describe("a")
	ra, _ := r.Describe("a")
	ra.LastEpoch = a.LastEpoch // memory only, as in Kafka
	if ra.ID != a.ID || ra.State != a.State || ra.Epoch != a.Epoch || ra.StartMs != a.StartMs || len(ra.Partitions) != 2 || ra.Partitions[1] != (TopicPartition{"u", 3}) {
		t.Fatalf("replayed %+v, want %+v", ra, a)
	}
	m := r.Loaded()
	if len(m.Markers) != 1 || m.Markers[0].TransactionalID != "a" || !m.Markers[0].Commit {
		t.Fatalf("loaded coordinator resumes %+v", m.Markers)
	}
}

func TestValidTransitions(t *testing.T) {
	for _, tc := range []struct {
		from, to State
		ok       bool
	}{
		{Empty, Ongoing, true}, {Ongoing, PrepareCommit, true}, {PrepareCommit, CompleteCommit, true},
		{PrepareAbort, CompleteAbort, true}, {PrepareEpochFence, PrepareAbort, true}, {CompleteAbort, Dead, true},
		{Empty, PrepareCommit, false}, {PrepareCommit, CompleteAbort, false}, {Ongoing, Dead, false}, {CompleteCommit, PrepareAbort, true}, {CompleteCommit, PrepareCommit, false},
	} {
		if got := ValidTransition(tc.from, tc.to); got != tc.ok {
			t.Errorf("%s -> %s: %v", tc.from, tc.to, got)
		}
	}
	if s, ok := ParseState("PrepareCommit"); !ok || s != PrepareCommit {
		t.Errorf("ParseState: %v %v", s, ok)
	}
}

func TestList(t *testing.T) {
	c := New(DefaultConfig())
	mustInit(t, c, 0, newReq("x-1", 1))
	mustInit(t, c, 0, newReq("x-2", 2))
	mustInit(t, c, 0, newReq("y", 3))
	out, _ := c.AddPartitions(10, "x-2", 2, 0, []TopicPartition{tp0})
	commit(t, c, 10, out)
	if l := c.List(100, ListFilter{States: []State{Ongoing}, MinDurationMs: -1}); len(l) != 1 || l[0].ID != "x-2" {
		t.Errorf("by state: %+v", l)
	}
	if l := c.List(100, ListFilter{ProducerIDs: []int64{1, 3}, MinDurationMs: -1}); len(l) != 2 {
		t.Errorf("by producer: %+v", l)
	}
	if l := c.List(100, ListFilter{MinDurationMs: 89}); len(l) != 1 {
		t.Errorf("by duration: %+v", l)
	}
	if l := c.List(100, ListFilter{MinDurationMs: 90}); len(l) != 0 {
		t.Errorf("by duration at the bound: %+v", l)
	}
	if l := c.List(100, ListFilter{Prefix: "x-", MinDurationMs: -1}); len(l) != 2 {
		t.Errorf("by prefix: %+v", l)
	}
}

// Holds: only CONCURRENT_TRANSACTIONS of an id with a change in flight,
// for HoldMs; HoldMs 0 never holds.
func TestHolds(t *testing.T) {
	c := New(DefaultConfig())
	r := mustInit(t, c, 1, newReq("a", 7))
	add, err := c.AddPartitions(2, "a", r.ProducerID, r.Epoch, []TopicPartition{tp0})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.AddPartitions(3, "a", r.ProducerID, r.Epoch, []TopicPartition{{"t", 1}})
	if got := c.Holds(3, "a", err); !errors.Is(err, kerr.ConcurrentTransactions) || got != 3+DefaultHoldMs {
		t.Fatalf("an add behind an add's write: %v, held until %d", err, got)
	}
	if got := c.Holds(3, "a", kerr.ProducerFenced); got != 0 {
		t.Fatalf("PRODUCER_FENCED held until %d", got)
	}
	commit(t, c, 4, add)
	end, err := c.EndTxn(5, "a", r.ProducerID, r.Epoch, true)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, 6, end) // PrepareCommit: markers asked for
	_, err = c.AddPartitions(7, "a", r.ProducerID, r.Epoch, []TopicPartition{{"t", 1}})
	if got := c.Holds(7, "a", err); got != 7+DefaultHoldMs {
		t.Fatalf("an add while the markers are written: %v, held until %d", err, got)
	}
	if got := c.Holds(7, "b", kerr.ConcurrentTransactions); got != 0 {
		t.Fatalf("an unknown id held until %d", got)
	}
	cfg := DefaultConfig()
	cfg.HoldMs = 0
	c0 := New(cfg)
	r0 := mustInit(t, c0, 1, newReq("a", 7))
	if _, err := c0.AddPartitions(2, "a", r0.ProducerID, r0.Epoch, []TopicPartition{tp0}); err != nil {
		t.Fatal(err)
	}
	_, err = c0.AddPartitions(3, "a", r0.ProducerID, r0.Epoch, []TopicPartition{{"t", 1}})
	if got := c0.Holds(3, "a", err); got != 0 {
		t.Fatalf("HoldMs 0 held until %d", got)
	}
}
