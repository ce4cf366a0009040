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
	// sent is the session's partitions as the leader holds them, in the
	// order the Build that sent them named them; sentDistinct: no key in
	// it twice.
	sent         []Partition
	sentDistinct bool

	// The request in flight: what sent becomes once it is answered.
	pending         []Partition
	pendingDistinct bool
	pendingFull     bool
	// built is set from a Build to its Answered.
	built bool

	// byKey and wanted are Build's maps for a round whose partitions
	// are not the session's in the same order, reused.
	byKey  map[Key]Partition
	wanted map[Key]struct{}
}

// NewBuilder starts without a session.
func NewBuilder() *Builder { return &Builder{} }

// Next is one fetch's session part.
type Next struct {
	SessionID int32
	Epoch     int32
	Send      []Partition // in want's order
	Forget    []Key       // in the order they were sent
}

// Build decides the next fetch of the partitions in want. Build keeps a
// copy of want, not want.
func (b *Builder) Build(want []Partition) Next {
	// The slice of the previous round is reused: a follower builds one
	// every fetch round, for every partition it follows.
	b.pending = append(b.pending[:0], want...)
	b.built = true
	if b.id == 0 {
		b.pendingFull = true
		b.pendingDistinct = b.collect(want) == len(want)
		return Next{Epoch: InitialEpoch, Send: want}
	}
	b.pendingFull = false
	n := Next{SessionID: b.id, Epoch: b.epoch}
	// The usual round: the session's partitions again, in the same
	// order. Each is compared with what the leader holds in place, with
	// no lookups, and nothing is forgotten.
	if b.sentDistinct && len(want) == len(b.sent) {
		same := true
		for i, p := range want {
			old := b.sent[i]
			if old.Key != p.Key {
				same = false
				break
			}
			if old != p {
				n.Send = append(n.Send, p)
			}
		}
		if same {
			b.pendingDistinct = true
			return n
		}
		n.Send = nil
	}
	if b.byKey == nil {
		b.byKey = make(map[Key]Partition, len(b.sent))
	} else {
		clear(b.byKey)
	}
	for _, p := range b.sent {
		b.byKey[p.Key] = p
	}
	distinct := b.collect(want)
	b.pendingDistinct = distinct == len(want)
	kept := 0 // partitions of the session fetched again
	for _, p := range want {
		old, ok := b.byKey[p.Key]
		if ok {
			kept++
		}
		if !ok || old != p {
			n.Send = append(n.Send, p)
		}
	}
	// Every partition of the session is fetched again: nothing to
	// forget.
	if kept == len(b.byKey) && len(want) == distinct {
		return n
	}
	for _, p := range b.sent {
		if _, ok := b.wanted[p.Key]; ok {
			continue
		}
		if _, ok := b.byKey[p.Key]; ok {
			n.Forget = append(n.Forget, p.Key)
			delete(b.byKey, p.Key) // once, were it sent twice
		}
	}
	return n
}

// collect sets wanted to the keys of want and returns how many there are.
func (b *Builder) collect(want []Partition) int {
	if b.wanted == nil {
		b.wanted = make(map[Key]struct{}, len(want))
	} else {
		clear(b.wanted)
	}
	for _, p := range want {
		b.wanted[p.Key] = struct{}{}
	}
	return len(b.wanted)
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
	// The old sent slice becomes the next round's pending one (Build
	// overwrites it).
	b.sent, b.pending = b.pending, b.sent
	b.sentDistinct = b.pendingDistinct
	b.built = false
}

// Reset forgets the session (a lost answer, a new connection): the leader
// may have moved its epoch on, so only a full fetch is safe.
func (b *Builder) Reset() { *b = Builder{} }

// SessionID is the current session, 0 if none.
func (b *Builder) SessionID() int32 { return b.id }
