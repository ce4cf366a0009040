// Package connlimit decides whether the broker accepts a new connection:
// Kafka's max.connections (broker-wide and per listener),
// max.connections.per.ip with its overrides, and
// max.connection.creation.rate (KIP-612). It holds no lock and reads no
// clock: the accept loops in internal/node serialize calls and pass the
// time in.
package connlimit

import "time"

// Unlimited is Kafka's "no limit" default (Int.MaxValue).
const Unlimited = 1<<31 - 1

// Config is the limits. A zero or Unlimited count is no limit, except in
// PerIPOverrides where 0 refuses every connection from that address.
type Config struct {
	// Max bounds connections over all listeners. Protected listeners are
	// not held to it (as Kafka exempts its inter-broker listener), so
	// clients can fill it without locking out replication or the quorum.
	Max int
	// PerIP bounds connections from one address on every listener but the
	// Unmetered ones; PerIPOverrides replaces it for chosen addresses.
	PerIP          int
	PerIPOverrides map[string]int
	// CreationRate bounds new connections per second over the listeners
	// that are not protected; faster ones wait.
	CreationRate int
	// Listeners has the listener-scoped limits (listener.name.NAME.*).
	Listeners map[string]ListenerLimits
	// Protected names the inter-broker and controller listeners.
	Protected map[string]bool
	// Unmetered names listeners whose peers are not held to PerIP: the
	// controller listeners, where only voters and brokers connect.
	Unmetered map[string]bool
}

// ListenerLimits are one listener's own limits.
type ListenerLimits struct {
	Max          int
	CreationRate int
}

// Reason says why a connection was refused; it labels the metric.
type Reason string

const (
	ReasonBrokerMax   Reason = "max_connections"
	ReasonListenerMax Reason = "listener_max_connections"
	ReasonPerIP       Reason = "max_connections_per_ip"
)

// Decision is the outcome of Admit: accept, refuse with a reason, or (for
// the creation rate) wait before trying again.
type Decision struct {
	Accept bool
	Refuse Reason
	Wait   time.Duration
}

// Limiter counts open connections and the recent creation rate.
type Limiter struct {
	cfg        Config
	total      int // connections on listeners that are not protected
	byListener map[string]int
	byIP       map[string]int
	brokerRate bucket
	rates      map[string]*bucket
}

// New returns a limiter with no connections open.
func New(cfg Config) *Limiter {
	l := &Limiter{cfg: cfg, byListener: map[string]int{}, byIP: map[string]int{}, rates: map[string]*bucket{}}
	l.brokerRate = newBucket(cfg.CreationRate)
	for name, ll := range cfg.Listeners {
		b := newBucket(ll.CreationRate)
		l.rates[name] = &b
	}
	return l
}

func limited(n int) bool { return n > 0 && n < Unlimited }

// Admit decides on a connection accepted on listener from ip at now. An
// accepted connection is counted until Release.
func (l *Limiter) Admit(listener, ip string, now time.Time) Decision {
	protected := l.cfg.Protected[listener]
	// The rate is checked first: a waiting connection is admitted (or
	// refused) on the counts after its wait.
	if b := l.rates[listener]; b != nil {
		if w := b.wait(now); w > 0 {
			return Decision{Wait: w}
		}
	}
	if !protected {
		if w := l.brokerRate.wait(now); w > 0 {
			return Decision{Wait: w}
		}
	}
	if ll, ok := l.cfg.Listeners[listener]; ok && limited(ll.Max) && l.byListener[listener] >= ll.Max {
		return Decision{Refuse: ReasonListenerMax}
	}
	if !protected && limited(l.cfg.Max) && l.total >= l.cfg.Max {
		return Decision{Refuse: ReasonBrokerMax}
	}
	if !l.cfg.Unmetered[listener] {
		perIP, override := l.cfg.PerIPOverrides[ip]
		if !override {
			perIP = l.cfg.PerIP
		}
		if (override && perIP == 0) || (limited(perIP) && l.byIP[ip] >= perIP) {
			return Decision{Refuse: ReasonPerIP}
		}
		l.byIP[ip]++
	}
	if b := l.rates[listener]; b != nil {
		b.take(now)
	}
	if !protected {
		l.brokerRate.take(now)
		l.total++
	}
	l.byListener[listener]++
	return Decision{Accept: true}
}

// Release forgets a connection Admit accepted.
func (l *Limiter) Release(listener, ip string) {
	if !l.cfg.Protected[listener] {
		l.total--
	}
	if !l.cfg.Unmetered[listener] {
		if l.byIP[ip]--; l.byIP[ip] <= 0 {
			delete(l.byIP, ip)
		}
	}
	l.byListener[listener]--
}

// Open returns the connections counted against max.connections.
func (l *Limiter) Open() int { return l.total }

// bucket is a token bucket holding one second of connections: a burst of
// rate connections, then one every 1/rate seconds. rate 0 is no limit.
type bucket struct {
	rate   int
	tokens float64
	last   time.Time
}

func newBucket(rate int) bucket {
	if !limited(rate) {
		return bucket{}
	}
	return bucket{rate: rate, tokens: float64(rate)}
}

func (b *bucket) refill(now time.Time) {
	if b.last.IsZero() {
		b.last = now
		return
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(float64(b.rate), b.tokens+d.Seconds()*float64(b.rate))
		b.last = now
	}
}

// wait is how long until a token is there (0: now).
func (b *bucket) wait(now time.Time) time.Duration {
	if b.rate == 0 {
		return 0
	}
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / float64(b.rate) * float64(time.Second))
}

func (b *bucket) take(now time.Time) {
	if b.rate == 0 {
		return
	}
	b.refill(now)
	b.tokens--
}
