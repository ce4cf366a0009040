// Package fetchsession is the broker's cache of incremental fetch sessions
// (KIP-227), as a pure core: no lock, no clock, no goroutine. The caller
// (node, sim) holds it behind its own lock and passes the time in
// milliseconds; the Fetch handler drives it in two steps:
//
//   - Begin, with the request's session id, epoch, partitions and forgotten
//     topics, decides which partitions to read (a full fetch: the request's;
//     an incremental one: the whole session after applying the request's
//     changes) or answers a session error.
//   - Complete, with what was read, decides the session id to answer with
//     (creating a session after a full fetch with epoch 0, when the cache
//     has room or may evict) and, for an incremental fetch, which partitions
//     the answer carries: only those with records, an error, or a changed
//     high watermark, last stable offset or log start offset.
//
// The rules are Kafka's (FetchSession.scala): epoch -1 is a sessionless
// full fetch that also closes the named session, epoch 0 a full fetch that
// opens a new one (closing the named one), any other epoch an incremental
// fetch that must name a cached session (else FETCH_SESSION_ID_NOT_FOUND)
// at its next epoch (else INVALID_FETCH_SESSION_EPOCH). When the cache is
// full, a new session evicts the least recently used session idle for
// longer than EvictionMs, else the weakest evictable session if the new one
// is stronger: a follower's (privileged) beats a consumer's, then more
// partitions beat fewer; a session younger than EvictionMs can be evicted
// only by a follower's, and a follower's only once older than EvictionMs.
package fetchsession

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/invariant"
)

// Epochs with a meaning of their own (KIP-227).
const (
	InitialEpoch int32 = 0  // full fetch, create a session
	FinalEpoch   int32 = -1 // full fetch, no session
)

// DefaultEvictionMs is Kafka's minimum idle time before a session may be
// evicted for being stale, or evicted at all by a consumer's session.
const DefaultEvictionMs = 120_000

// Key names one partition in a session. A session made by a request that
// names topics (Fetch v7-v12) keys them by Name with a zero ID; one from
// v13+ keys them by ID with an empty Name.
type Key struct {
	Name      string
	ID        [16]byte
	Partition int32
}

// Partition is one partition's fetch state, as a request sends it.
type Partition struct {
	Key
	FetchOffset        int64
	LogStartOffset     int64 // followers only; -1 otherwise
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// Result is what reading one partition gave, in the terms that decide
// whether an incremental answer must carry it.
type Result struct {
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	HasRecords       bool
	Failed           bool // an error code other than NONE
	Diverging        bool // a diverging epoch is set
}

// Request is one Fetch request's session part.
type Request struct {
	SessionID    int32
	Epoch        int32
	Privileged   bool // a follower's fetch (replica id >= 0)
	UsesTopicIDs bool // v13+
	Partitions   []Partition
	Forgotten    []Key
	NowMs        int64
}

// Kind is how a fetch is served.
type Kind int

const (
	// Sessionless: a full fetch that creates no session (epoch -1), or an
	// incremental one whose session became empty.
	Sessionless Kind = iota
	// Full: a full fetch with epoch 0; Complete may create a session.
	Full
	// Incremental: a fetch within an existing session.
	Incremental
	// Failed: a session error; ErrorCode says which.
	Failed
)

// Context is Begin's decision, handed back to Complete.
type Context struct {
	Kind      Kind
	ErrorCode int16
	// Read lists the partitions to read, in the order the answer gives
	// them: the request's for a full fetch, the session's for an
	// incremental one.
	Read         []Partition
	sessionID    int32
	nextEpoch    int32 // the epoch the session expects after this fetch
	privileged   bool
	usesTopicIDs bool
}

// Outcome is Complete's decision.
type Outcome struct {
	// SessionID is the session id to answer with (0: none).
	SessionID int32
	// Include says, per entry of Context.Read, whether the answer carries
	// it. Every entry for a full or sessionless fetch.
	Include []bool
	// ErrorCode is set when the session changed between Begin and
	// Complete (a concurrent fetch of the same session, an eviction): the
	// answer is then that error with no partitions.
	ErrorCode int16
}

// cached is one partition of a session: the last fetch state the client
// sent and the last response state the client was told.
type cached struct {
	Partition
	hw, lso, logStart int64
}

type session struct {
	id         int32
	privileged bool
	topicIDs   bool
	parts      []*cached // in the order they are read and answered
	index      map[Key]*cached
	epoch      int32 // the epoch the next fetch must carry
	createdMs  int64
	lastUsedMs int64
}

// Cache holds the sessions of one broker.
type Cache struct {
	maxSlots   int
	evictionMs int64
	sessions   map[int32]*session
	rng        uint64
	evictions  uint64
}

// New makes a cache of at most maxSlots sessions
// (max.incremental.fetch.session.cache.slots). seed starts the generator
// of session ids, so a simulation replays the same ids.
func New(maxSlots int, evictionMs int64, seed uint64) *Cache {
	return &Cache{maxSlots: maxSlots, evictionMs: evictionMs, sessions: map[int32]*session{}, rng: seed}
}

// Len is the number of cached sessions.
func (c *Cache) Len() int { return len(c.sessions) }

// Evictions counts sessions evicted to make room for new ones.
func (c *Cache) Evictions() uint64 { return c.evictions }

// Partitions is the number of partitions over all cached sessions.
func (c *Cache) Partitions() int {
	n := 0
	for _, s := range c.sessions {
		n += len(s.parts)
	}
	return n
}

// Begin decides how a fetch is served.
func (c *Cache) Begin(r Request) Context {
	ctx := Context{privileged: r.Privileged, usesTopicIDs: r.UsesTopicIDs}
	if r.Epoch == FinalEpoch || r.Epoch == InitialEpoch {
		if r.SessionID != 0 {
			// Any session a full fetch names is closed.
			delete(c.sessions, r.SessionID)
		}
		ctx.Kind = Sessionless
		if r.Epoch == InitialEpoch {
			ctx.Kind = Full
		}
		ctx.Read = r.Partitions
		return ctx
	}
	s := c.sessions[r.SessionID]
	if s == nil {
		return Context{Kind: Failed, ErrorCode: kerr.FetchSessionIDNotFound.Code}
	}
	if s.epoch != r.Epoch {
		return Context{Kind: Failed, ErrorCode: kerr.InvalidFetchSessionEpoch.Code}
	}
	if s.topicIDs != r.UsesTopicIDs {
		// The client switched between naming topics and using ids.
		return Context{Kind: Failed, ErrorCode: kerr.FetchSessionTopicIDError.Code}
	}
	for _, p := range r.Partitions {
		if cp := s.index[p.Key]; cp != nil {
			cp.Partition = p
			continue
		}
		cp := &cached{Partition: p, hw: -1, lso: -1, logStart: -1}
		s.parts = append(s.parts, cp)
		s.index[p.Key] = cp
	}
	if len(r.Forgotten) > 0 {
		for _, k := range r.Forgotten {
			delete(s.index, k)
		}
		kept := s.parts[:0]
		for _, cp := range s.parts {
			if s.index[cp.Key] == cp {
				kept = append(kept, cp)
			}
		}
		clear(s.parts[len(kept):])
		s.parts = kept
	}
	if len(s.parts) == 0 {
		// Nothing left to fetch: the session ends and the fetch is
		// answered without one.
		delete(c.sessions, s.id)
		return Context{Kind: Sessionless, privileged: r.Privileged, usesTopicIDs: r.UsesTopicIDs}
	}
	s.lastUsedMs = r.NowMs
	s.epoch = nextEpoch(s.epoch)
	ctx.Kind = Incremental
	ctx.sessionID = s.id
	ctx.nextEpoch = s.epoch
	ctx.Read = make([]Partition, len(s.parts))
	for i, cp := range s.parts {
		ctx.Read[i] = cp.Partition
	}
	return ctx
}

// Complete decides the answer's session id and, for an incremental fetch,
// which partitions it carries. results has one entry per ctx.Read entry.
func (c *Cache) Complete(ctx Context, results []Result, nowMs int64) Outcome {
	switch ctx.Kind {
	case Failed:
		return Outcome{ErrorCode: ctx.ErrorCode}
	case Sessionless:
		return Outcome{Include: all(len(results))}
	case Full:
		return Outcome{SessionID: c.create(ctx, results, nowMs), Include: all(len(results))}
	}
	s := c.sessions[ctx.sessionID]
	if s == nil || s.epoch != ctx.nextEpoch {
		// Evicted, or another fetch of the same session came between.
		return Outcome{ErrorCode: kerr.InvalidFetchSessionEpoch.Code}
	}
	out := Outcome{SessionID: s.id, Include: make([]bool, len(results))}
	// With the epoch Begin set, no other fetch of the session came
	// between (each Begin moves it on): its partitions are ctx.Read's,
	// in that order, and are updated in place without a lookup (an idle
	// follower's session has thousands).
	if len(s.parts) != len(results) {
		invariant.Broken("fetch session %d: %d partitions, %d results", s.id, len(s.parts), len(results))
		return Outcome{ErrorCode: kerr.InvalidFetchSessionEpoch.Code}
	}
	sent := 0
	for i, res := range results {
		cp := s.parts[i]
		if invariant.Panics && cp.Key != ctx.Read[i].Key {
			invariant.Broken("fetch session %d: partition %d is %v, read as %v", s.id, i, cp.Key, ctx.Read[i].Key)
		}
		if cp.update(res) {
			out.Include[i] = true
			sent++
		}
	}
	// Partitions that were answered move to the end, so the next fetch's
	// byte limits favour the others (Kafka does the same). An idle
	// answer moves none.
	if sent > 0 {
		parts := make([]*cached, 0, len(s.parts))
		for i, cp := range s.parts {
			if !out.Include[i] {
				parts = append(parts, cp)
			}
		}
		for i, cp := range s.parts {
			if out.Include[i] {
				parts = append(parts, cp)
			}
		}
		s.parts = parts
	}
	s.lastUsedMs = nowMs
	return out
}

// update records a result and reports whether the client must be told.
func (cp *cached) update(res Result) bool {
	must := res.HasRecords || res.Diverging
	if res.Failed {
		// Always answered; and forget what the client was told, so the
		// first good answer after the error is sent in full.
		cp.hw, cp.lso, cp.logStart = -1, -1, -1
		return true
	}
	if cp.hw != res.HighWatermark || cp.lso != res.LastStableOffset || cp.logStart != res.LogStartOffset {
		must = true
		cp.hw, cp.lso, cp.logStart = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
	}
	return must
}

// create makes a session after a full fetch, if there is a free slot or a
// session to evict; 0 means none was made.
func (c *Cache) create(ctx Context, results []Result, nowMs int64) int32 {
	if c.maxSlots <= 0 {
		return 0
	}
	if len(c.sessions) >= c.maxSlots && !c.evict(ctx.privileged, len(ctx.Read), nowMs) {
		return 0
	}
	s := &session{
		id: c.newID(), privileged: ctx.privileged, topicIDs: ctx.usesTopicIDs,
		index: make(map[Key]*cached, len(ctx.Read)), epoch: nextEpoch(InitialEpoch),
		createdMs: nowMs, lastUsedMs: nowMs,
	}
	for i, p := range ctx.Read {
		if _, dup := s.index[p.Key]; dup {
			continue
		}
		cp := &cached{Partition: p, hw: -1, lso: -1, logStart: -1}
		cp.update(results[i])
		s.parts = append(s.parts, cp)
		s.index[p.Key] = cp
	}
	c.sessions[s.id] = s
	return s.id
}

// evict makes room for a new session of the given strength.
func (c *Cache) evict(privileged bool, size int, nowMs int64) bool {
	// First choice: the least recently used session, if stale.
	var lru *session
	for _, s := range c.sessions {
		if lru == nil || s.lastUsedMs < lru.lastUsedMs || (s.lastUsedMs == lru.lastUsedMs && s.id < lru.id) {
			lru = s
		}
	}
	if lru == nil {
		return false
	}
	if nowMs-lru.lastUsedMs > c.evictionMs {
		delete(c.sessions, lru.id)
		c.evictions++
		return true
	}
	// Else the weakest session the new one may evict, if it is weaker.
	var weakest *session
	for _, s := range c.sessions {
		old := nowMs-s.createdMs > c.evictionMs
		// A consumer's session may evict only sessions older than
		// EvictionMs; a follower's also any consumer's session.
		if !old && !(privileged && !s.privileged) {
			continue
		}
		if weakest == nil || weaker(s, weakest) {
			weakest = s
		}
	}
	if weakest == nil || !stronger(privileged, size, weakest) {
		return false
	}
	delete(c.sessions, weakest.id)
	c.evictions++
	return true
}

// weaker orders sessions by eviction preference: consumers before
// followers, then fewer partitions first, then lower id.
func weaker(a, b *session) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if len(a.parts) != len(b.parts) {
		return len(a.parts) < len(b.parts)
	}
	return a.id < b.id
}

// stronger reports whether a new session outranks s.
func stronger(privileged bool, size int, s *session) bool {
	if privileged != s.privileged {
		return privileged
	}
	return size > len(s.parts)
}

func (c *Cache) newID() int32 {
	for {
		// splitmix64: a fixed sequence from the seed.
		c.rng += 0x9e3779b97f4a7c15
		z := c.rng
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		id := int32(z & 0x7fffffff)
		if _, used := c.sessions[id]; id != 0 && !used {
			return id
		}
	}
}

// nextEpoch wraps from MaxInt32 to 1: 0 and -1 mean full fetches.
func nextEpoch(e int32) int32 {
	if e < 0 || e == 1<<31-1 {
		return 1
	}
	return e + 1
}

func all(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}
