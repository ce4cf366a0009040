package fetchsession

// Builder is the fetching side of a session, as a follower's replica
// fetcher keeps it (Kafka's FetchSessionHandler): the first fetch is full
// at epoch 0; once the leader answers with a session id, each fetch sends
// only the partitions whose fetch state changed since the leader last heard
// it, and forgets those no longer fetched. Any error, a lost answer or a
// sessionless answer starts over with a full fetch. Pure, like Cache: the
// fetcher's one goroutine owns it.
type Builder struct {
	id    int32
	epoch int32
	sent  map[Key]Partition // the session's partitions as the leader holds them

	// The request in flight: what sent becomes once it is answered.
	pending     map[Key]Partition
	pendingFull bool
	// built is set from a Build to its Answered.
	built bool
}

// NewBuilder starts without a session.
func NewBuilder() *Builder { return &Builder{} }

// Next is one fetch's session part.
type Next struct {
	SessionID int32
	Epoch     int32
	Send      []Partition // in want's order
	Forget    []Key
}

// Build decides the next fetch of the partitions in want.
func (b *Builder) Build(want []Partition) Next {
	// The map of the previous round is reused: a follower builds one
	// every fetch round, for every partition it follows.
	if b.pending == nil {
		b.pending = make(map[Key]Partition, len(want))
	} else {
		clear(b.pending)
	}
	for _, p := range want {
		b.pending[p.Key] = p
	}
	b.built = true
	if b.id == 0 {
		b.pendingFull = true
		return Next{Epoch: InitialEpoch, Send: want}
	}
	b.pendingFull = false
	n := Next{SessionID: b.id, Epoch: b.epoch}
	kept := 0 // partitions of the session fetched again
	for _, p := range want {
		old, ok := b.sent[p.Key]
		if ok {
			kept++
		}
		if !ok || old != p {
			n.Send = append(n.Send, p)
		}
	}
	// Every partition of the session is fetched again (the usual round):
	// nothing to forget, and no need to look each up again.
	if kept == len(b.sent) && len(want) == len(b.pending) {
		return n
	}
	for k := range b.sent {
		if _, ok := b.pending[k]; !ok {
			n.Forget = append(n.Forget, k)
		}
	}
	return n
}

// Answered records the leader's answer to the last Build: its top-level
// error code and session id.
func (b *Builder) Answered(errorCode int16, sessionID int32) {
	switch {
	case !b.built:
		// No Build to answer: nothing to make of it but a fresh start.
		b.Reset()
		return
	case errorCode != 0, sessionID == 0, !b.pendingFull && sessionID != b.id:
		// A session error (or any top-level one), no session, or not
		// ours: the next fetch is full and asks for a new one.
		b.Reset()
		return
	case b.pendingFull:
		b.id, b.epoch = sessionID, nextEpoch(InitialEpoch)
	default:
		b.epoch = nextEpoch(b.epoch)
	}
	// The old sent map becomes the next round's pending one (Build
	// clears it).
	b.sent, b.pending = b.pending, b.sent
	b.built = false
}

// Reset forgets the session (a lost answer, a new connection): the leader
// may have moved its epoch on, so only a full fetch is safe.
func (b *Builder) Reset() { *b = Builder{} }

// SessionID is the current session, 0 if none.
func (b *Builder) SessionID() int32 { return b.id }
