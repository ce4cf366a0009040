package node

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/fetchsession"
)

// fetchSessions wraps the pure fetch-session cache with the lock and the
// clock; every decision is the core's.
type fetchSessions struct {
	mu    sync.Mutex
	cache *fetchsession.Cache
}

var _ api.FetchSessions = (*fetchSessions)(nil)

func newFetchSessions(slots int) *fetchSessions {
	var seed [8]byte
	rand.Read(seed[:])
	return &fetchSessions{cache: fetchsession.New(slots, fetchsession.DefaultEvictionMs, binary.LittleEndian.Uint64(seed[:]))}
}

// stats reads the cache's size for the metrics.
func (f *fetchSessions) stats() (sessions, partitions int, evictions uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cache.Len(), f.cache.Partitions(), f.cache.Evictions()
}

func (f *fetchSessions) Begin(r fetchsession.Request) fetchsession.Context {
	r.NowMs = time.Now().UnixMilli()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cache.Begin(r)
}

func (f *fetchSessions) Complete(ctx fetchsession.Context, results []fetchsession.Result) fetchsession.Outcome {
	now := time.Now().UnixMilli()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cache.Complete(ctx, results, now)
}
