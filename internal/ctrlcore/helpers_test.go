package ctrlcore

import (
	"testing"
	"time"

	"github.com/skein-log/skein/internal/balancer"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
)

var t0 = time.Unix(1_700_000_000, 0)

const timeout = 2 * time.Second

// harness drives a Core as a runtime does: it keeps the applied image,
// applies the entry in flight when told to commit it, and runs answers.
type harness struct {
	t       *testing.T
	c       *Core
	im      *metadata.Image
	now     time.Time
	pending *Proposal
	notes   []Note
	fenced  int
	// asked are the brokers the core asked for DescribeLogDirs and not
	// yet answered (answerLogDirs).
	asked    []int32
	dirMoves []balancer.DirMove // every Ready.LogDirMoves
	refused  []RefusedMove      // every Ready.BalancerRefused
	// atCommit counts the answers given in Ready.AnswersAtCommit.
	atCommit int
}

func newHarness(t *testing.T, im *metadata.Image) *harness {
	t.Helper()
	cfg, err := config.NewBroker(map[string]string{"node.id": "1", "process.roles": "broker,controller"})
	if err != nil {
		t.Fatal(err)
	}
	cc := ConfigFor(cfg, 10)
	cc.SessionTimeout = timeout
	cc.RebalanceInterval = 0
	h := &harness{t: t, c: New(cc), im: im, now: t0}
	h.do(func(now time.Time, im *metadata.Image) Ready { return h.c.Activate(now, im) })
	return h
}

// do runs one event and carries out its Ready, keeping the proposal.
func (h *harness) do(ev func(time.Time, *metadata.Image) Ready) {
	h.t.Helper()
	rd := ev(h.now, h.im)
	h.notes = append(h.notes, rd.Notes...)
	h.fenced += rd.Fenced
	h.asked = append(h.asked, rd.DescribeLogDirs...)
	h.dirMoves = append(h.dirMoves, rd.LogDirMoves...)
	h.refused = append(h.refused, rd.BalancerRefused...)
	if rd.Propose != nil {
		if h.pending != nil {
			h.t.Fatalf("second proposal %q while %q is in flight", rd.Propose.What, h.pending.What)
		}
		h.pending = rd.Propose
	}
	for _, a := range rd.AnswersAtCommit {
		h.atCommit++
		a()
	}
	for _, a := range rd.Answers {
		a()
	}
}

// commit applies the proposal in flight (a barrier applies nothing) and
// reports it done; it returns the proposal.
func (h *harness) commit() *Proposal {
	h.t.Helper()
	p := h.pending
	if p == nil {
		h.t.Fatal("nothing in flight")
	}
	h.pending = nil
	recs, err := metadata.DecodeEntry(p.Data)
	if err != nil {
		h.t.Fatal(err)
	}
	next, err := h.im.Apply(recs...)
	if err != nil {
		h.t.Fatalf("proposal %q does not apply: %v", p.What, err)
	}
	h.im = next.WithVersion(h.im.Version() + 1)
	h.do(func(now time.Time, im *metadata.Image) Ready { return h.c.ProposalDone(now, im, p.ID, nil) })
	return p
}

// settle commits proposals until none is in flight.
func (h *harness) settle() {
	h.t.Helper()
	for h.pending != nil {
		h.commit()
	}
}

// catchUp commits the barrier a first decision needs, via a no-op.
func (h *harness) catchUp() {
	h.t.Helper()
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.Submit(now, im, "no-op", func(*metadata.Image) ([]metadata.Record, error) { return nil, nil }, func(error) {})
	})
	h.settle()
}

func (h *harness) apply(recs ...metadata.Record) {
	h.t.Helper()
	next, err := h.im.Apply(recs...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.im = next.WithVersion(h.im.Version() + 1)
}

func (h *harness) broker(id int32) *metadata.Broker {
	h.t.Helper()
	br, ok := h.im.Broker(id)
	if !ok {
		h.t.Fatalf("broker %d not registered", id)
	}
	return br
}

// image returns an image with brokers ids registered (epoch 10+id) and
// one topic "t" whose partition 0 has replicas ids, all in the ISR,
// led by the first.
func image(t *testing.T, ids ...int32) *metadata.Image {
	t.Helper()
	im := metadata.Empty("c")
	var recs []metadata.Record
	for _, id := range ids {
		recs = append(recs, metadata.RegisterBroker{Broker: metadata.Broker{ID: id, Epoch: 10 + int64(id)}})
	}
	recs = append(recs, metadata.CreateTopic{Name: "t", ID: topic, Partitions: []metadata.Partition{
		{Index: 0, Replicas: ids, ISR: ids, Leader: ids[0]}}})
	im, err := im.Apply(recs...)
	if err != nil {
		t.Fatal(err)
	}
	return im.WithVersion(20)
}

var topic = metadata.TopicID{0: 7, 15: 1}

func partition(t *testing.T, im *metadata.Image) metadata.Partition {
	t.Helper()
	tp, ok := im.TopicByID(topic)
	if !ok {
		t.Fatal("no topic")
	}
	return tp.Partitions[0]
}
