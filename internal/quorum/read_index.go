package quorum

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrReadIndexLost: no leader answered a ReadIndex round in time (none
// known, a message lost, a leader change); nothing is known of the
// leader's commit index.
var ErrReadIndexLost = errors.New("quorum read index not answered")

const (
	// readQueueLen bounds ReadIndex calls waiting for the Raft loop.
	readQueueLen = 256
	// maxPendingReads bounds callers waiting for a round's answer.
	maxPendingReads = 4096
	// readRoundTicks is how many ticks a round may go unanswered before
	// its callers are told ErrReadIndexLost: Raft drops a read index
	// request silently when the node knows no leader.
	readRoundTicks = 10
)

// readRequest is one ReadIndex call waiting for the loop.
type readRequest struct {
	done chan readResult // buffered: the loop never blocks on it
}

type readResult struct {
	index uint64
	err   error
}

// readRound is the one ReadIndex request Raft has: every caller queued
// before it was issued shares its answer, and callers arriving meanwhile
// wait for the next round, so a burst costs two rounds, not one each.
type readRound struct {
	seq     uint64
	waiters []chan readResult
	ticks   int
}

// readIndexes is the loop's ReadIndex state (owned by the loop goroutine).
type readIndexes struct {
	seq      uint64
	inFlight *readRound
	next     []chan readResult
}

// ReadIndex returns the leader's commit index, confirmed by a quorum after
// this call began (Raft's linearizable read). Once this node has applied
// it (Applied, AppliedChanged), its state machine holds every entry
// committed before the call: what any other node had applied then. It
// fails with ErrReadIndexLost when no leader answers within a few ticks.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	r := readRequest{done: make(chan readResult, 1)}
	select {
	case n.reads <- r:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.done:
		return 0, ErrStopped
	}
	select {
	case res := <-r.done:
		return res.index, res.err
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.done:
		select {
		case res := <-r.done:
			return res.index, res.err
		default:
			return 0, ErrStopped
		}
	}
}

// Applied is the last index applied on this node (every entry up to it
// has been through Apply, empty ones included).
func (n *Node) Applied() uint64 { return n.applied.Load() }

// queueRead takes a ReadIndex call into the next round.
func (n *Node) queueRead(r readRequest) {
	if len(n.readIdx.next) >= maxPendingReads {
		r.done <- readResult{err: fmt.Errorf("%w: %d read index calls pending", ErrBusy, len(n.readIdx.next))}
		return
	}
	n.readIdx.next = append(n.readIdx.next, r.done)
	n.startReadRound()
}

// startReadRound issues a round for the queued callers if none is out.
func (n *Node) startReadRound() {
	ri := &n.readIdx
	if ri.inFlight != nil || len(ri.next) == 0 {
		return
	}
	ri.seq++
	ri.inFlight = &readRound{seq: ri.seq, waiters: ri.next}
	ri.next = nil
	n.core.ReadIndex(readContext(n.tag, ri.seq))
}

// readAnswered resolves the round a ReadState answers.
func (n *Node) readAnswered(rctx []byte, index uint64) {
	ri := &n.readIdx
	if ri.inFlight == nil || string(rctx) != string(readContext(n.tag, ri.inFlight.seq)) {
		return // an abandoned round's late answer
	}
	n.endReadRound(readResult{index: index})
}

// readTick abandons a round that has gone unanswered too long.
func (n *Node) readTick() {
	ri := &n.readIdx
	if ri.inFlight == nil {
		return
	}
	if ri.inFlight.ticks++; ri.inFlight.ticks >= readRoundTicks {
		n.endReadRound(readResult{err: ErrReadIndexLost})
	}
}

func (n *Node) endReadRound(res readResult) {
	ri := &n.readIdx
	for _, w := range ri.inFlight.waiters {
		w <- res
	}
	ri.inFlight = nil
	n.startReadRound()
}

// failReads resolves every waiting ReadIndex call when the loop ends.
func (n *Node) failReads(err error) {
	ri := &n.readIdx
	if ri.inFlight != nil {
		for _, w := range ri.inFlight.waiters {
			w <- readResult{err: err}
		}
		ri.inFlight = nil
	}
	for _, w := range ri.next {
		w <- readResult{err: err}
	}
	ri.next = nil
	for {
		select {
		case r := <-n.reads:
			r.done <- readResult{err: err}
		default:
			return
		}
	}
}

// readContext tags a round: this incarnation and its sequence number, so
// an answer to another process's request is never taken for ours.
func readContext(tag, seq uint64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, tag)
	binary.BigEndian.PutUint64(b[8:], seq)
	return b
}
