// Package replthrottle is the replication throttle core (Kafka's
// ReplicationQuotaManager, KIP-73): which replicas a topic's
// leader.replication.throttled.replicas / follower.replication.throttled.replicas
// name, and a byte-rate bucket that says how much throttled replication
// traffic may go now. It holds no lock and reads no clock: the caller
// passes the time and serialises calls.
//
// Kafka measures the throttled traffic with a sampled rate of 11 one-second
// windows and lets a first burst of ten seconds' worth through. Skein uses a
// token bucket instead, whose burst is one second of the rate: the catch-up
// of a small partition is throttled from its first byte, and the traffic
// over any interval t stays below rate×t + one second's burst + one batch
// (a read never splits a batch, so the bucket may go into debt by one).
package replthrottle

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxListEntries bounds a throttled-replicas list: a topic of 10,000
// partitions with a few replicas each fits.
const MaxListEntries = 100_000

// Replica is one partition:broker entry of a throttled-replicas list.
type Replica struct {
	Partition int32
	Broker    int32
}

// Replicas is a parsed throttled-replicas list: "*" (every replica of the
// topic) or partition:broker entries. The zero value throttles nothing.
type Replicas struct {
	all bool
	set map[Replica]struct{}
}

// ErrInvalidList is wrapped by every ParseReplicas error.
var ErrInvalidList = errors.New(`throttled replicas must be "*" or a list of partition:broker`)

// ParseReplicas parses a throttled-replicas config value as Kafka does:
// empty, "*", or comma-separated partition:broker pairs of non-negative
// integers (whitespace around items is ignored).
func ParseReplicas(s string) (Replicas, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Replicas{}, nil
	}
	if s == "*" {
		return Replicas{all: true}, nil
	}
	items := strings.Split(s, ",")
	if len(items) > MaxListEntries {
		return Replicas{}, fmt.Errorf("%w: more than %d entries", ErrInvalidList, MaxListEntries)
	}
	r := Replicas{set: make(map[Replica]struct{}, len(items))}
	for _, item := range items {
		item = strings.TrimSpace(item)
		p, b, ok := strings.Cut(item, ":")
		if !ok {
			return Replicas{}, fmt.Errorf("%w: %q has no ':'", ErrInvalidList, item)
		}
		part, err1 := parseID(p)
		broker, err2 := parseID(b)
		if err := errors.Join(err1, err2); err != nil {
			return Replicas{}, fmt.Errorf("%w: %q: %w", ErrInvalidList, item, err)
		}
		r.set[Replica{Partition: part, Broker: broker}] = struct{}{}
	}
	return r, nil
}

func parseID(s string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("not an integer: %q", s)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative: %d", n)
	}
	return int32(n), nil
}

// Has reports whether the list names the replica of partition on broker.
func (r Replicas) Has(partition, broker int32) bool {
	if r.all {
		return true
	}
	_, ok := r.set[Replica{Partition: partition, Broker: broker}]
	return ok
}

// Format writes entries as a config value, in the given order.
func Format(entries []Replica) string {
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = fmt.Sprintf("%d:%d", e.Partition, e.Broker)
	}
	return strings.Join(parts, ",")
}

// Unlimited is the rate that throttles nothing: Kafka's default of
// Long.MaxValue bytes per second.
const Unlimited = math.MaxInt64

// Bucket is a token bucket of bytes: it fills at Rate bytes per second up
// to one second's worth, and each read takes what it returned. A read is
// allowed while the bucket holds any byte, and may leave it in debt (a
// batch is never split); the debt is paid off before the next read.
type Bucket struct {
	rate   int64 // bytes per second; Unlimited or <= 0 throttles nothing
	tokens float64
	lastMs int64
	primed bool
}

// NewBucket returns a full bucket of rate bytes per second.
func NewBucket(rate int64) *Bucket {
	b := &Bucket{}
	b.SetRate(rate)
	return b
}

// SetRate changes the rate. Tokens above the new burst are dropped, so
// lowering the rate takes effect at once; a debt is kept.
func (b *Bucket) SetRate(rate int64) {
	b.rate = rate
	if b.limited() {
		b.tokens = min(b.tokens, float64(rate))
		if !b.primed {
			b.tokens = float64(rate)
		}
	}
}

// Rate is the configured rate in bytes per second.
func (b *Bucket) Rate() int64 { return b.rate }

func (b *Bucket) limited() bool { return b.rate > 0 && b.rate != Unlimited }

// refill adds what the time since the last call earned, up to one second's
// burst. Time that goes backwards earns nothing.
func (b *Bucket) refill(nowMs int64) {
	if !b.primed {
		b.primed, b.lastMs = true, nowMs
		return
	}
	if nowMs > b.lastMs {
		b.tokens = min(b.tokens+float64(nowMs-b.lastMs)*float64(b.rate)/1000, float64(b.rate))
		b.lastMs = nowMs
	}
}

// Allowance is how many bytes a throttled read may return at nowMs: 0
// (ok false) while the bucket is empty or in debt, math.MaxInt when the
// rate is unlimited.
func (b *Bucket) Allowance(nowMs int64) (bytes int, ok bool) {
	if !b.limited() {
		return math.MaxInt, true
	}
	b.refill(nowMs)
	if b.tokens < 1 {
		return 0, false
	}
	return int(b.tokens), true
}

// Take counts n bytes a throttled read returned at nowMs.
func (b *Bucket) Take(n int, nowMs int64) {
	if !b.limited() || n <= 0 {
		return
	}
	b.refill(nowMs)
	b.tokens -= float64(n)
}

// WaitMs is how long from nowMs until a throttled read is allowed again:
// 0 if it is now.
func (b *Bucket) WaitMs(nowMs int64) int64 {
	if !b.limited() {
		return 0
	}
	b.refill(nowMs)
	if b.tokens >= 1 {
		return 0
	}
	// Counted from the last refill: a clock behind it earns nothing yet.
	return max(b.lastMs-nowMs, 0) + int64(math.Ceil((1-b.tokens)*1000/float64(b.rate)))
}
