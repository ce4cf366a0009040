package api

import (
	"sync"

	"github.com/skein-log/skein/internal/metadata"
)

// appendOrder keeps a producer's transactional appends to a partition in
// the order their Produce requests arrived while some of them wait for
// the transaction coordinator (KIP-890's verification, or part 2's
// implicit add). A Produce handler runs on its connection's reader, so
// requests start in arrival order; but the coordinator can answer a
// later request's check first (the earlier one waiting out
// CONCURRENT_TRANSACTIONS while the previous transaction's markers are
// written). Appending the later batch first gets it
// OUT_OF_ORDER_SEQUENCE_NUMBER, which a transactional client takes as
// fatal for the transaction. Kafka cannot reorder them: it reads no
// further request from a connection until the current one is answered.
// Here a part that must wait takes a turn in its key's queue, and a
// part runs only once every earlier turn has run; parts of a key with no
// queue run at once, costing nothing.
type appendOrder struct {
	mu     sync.Mutex
	queues map[appendKey]*appendQueue
}

type appendKey struct {
	topic     metadata.TopicID
	partition int32
	producer  int64
}

type appendQueue struct {
	turns []*appendTurn
	// draining: one caller runs the ready turns at the head, outside
	// the lock, so two callers cannot run them out of order.
	draining bool
}

// appendTurn is one part's place in its key's queue: run is set once
// the part is ready (verified, refused, or needing nothing).
type appendTurn struct {
	key appendKey
	run func()
}

// waiting reports whether key has turns not yet run, so a part that
// needs no coordinator answer must still queue behind them.
func (o *appendOrder) waiting(key appendKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.queues[key] != nil
}

// join takes the next turn of key.
func (o *appendOrder) join(key appendKey) *appendTurn {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.queues == nil {
		o.queues = map[appendKey]*appendQueue{}
	}
	q := o.queues[key]
	if q == nil {
		q = &appendQueue{}
		o.queues[key] = q
	}
	t := &appendTurn{key: key}
	q.turns = append(q.turns, t)
	return t
}

// ready marks t ready to run run, then runs every ready turn at the head
// of its queue in order, unless another caller is already doing so (it
// will run this one too). The queue is forgotten once empty.
func (o *appendOrder) ready(t *appendTurn, run func()) {
	if run == nil {
		panic("api: appendOrder.ready without a run")
	}
	o.mu.Lock()
	t.run = run
	q := o.queues[t.key]
	if q.draining {
		o.mu.Unlock()
		return
	}
	q.draining = true
	for len(q.turns) > 0 && q.turns[0].run != nil {
		head := q.turns[0]
		q.turns[0] = nil
		q.turns = q.turns[1:]
		o.mu.Unlock()
		head.run()
		o.mu.Lock()
	}
	q.draining = false
	if len(q.turns) == 0 {
		delete(o.queues, t.key)
	}
	o.mu.Unlock()
}
