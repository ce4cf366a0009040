// Package quota is the client quota core (KIP-13, KIP-55, KIP-124,
// KIP-219): which quota applies to a request's user and client id, the
// rate each quota entity has used over sampled windows, and how long a
// client that went over must be throttled. It holds no lock and reads no
// clock: the caller passes the time and serialises calls.
package quota

import (
	"math"

	"github.com/skein-log/skein/internal/metadata"
)

// Lookup is the part of the metadata image quotas are read from.
type Lookup interface {
	ClientQuota(e metadata.QuotaEntity) (map[string]float64, bool)
}

// Sensor identifies whose usage is counted together: Kafka's quota metric
// tags. A quota set on a user is shared by all that user's client ids
// (ClientID ""); a default quota is counted per user or client id it
// applies to.
type Sensor struct {
	Key      string
	User     string
	ClientID string
}

// Resolve finds the quota of one key for a request by user and client id,
// in Kafka's order of precedence:
//
//	user + client-id, user + default client-id, user,
//	default user + client-id, default user + default client-id, default user,
//	client-id, default client-id
//
// ok is false when no entity sets the key: the client is unlimited.
func Resolve(q Lookup, key, user, clientID string) (bound float64, s Sensor, ok bool) {
	named := func(n string) metadata.QuotaName { return metadata.QuotaName{Set: true, Name: n} }
	def := metadata.QuotaName{Set: true, Default: true}
	none := metadata.QuotaName{}
	order := []struct {
		e          metadata.QuotaEntity
		byUser     bool
		byClientID bool
	}{
		{metadata.QuotaEntity{User: named(user), ClientID: named(clientID)}, true, true},
		{metadata.QuotaEntity{User: named(user), ClientID: def}, true, true},
		{metadata.QuotaEntity{User: named(user), ClientID: none}, true, false},
		{metadata.QuotaEntity{User: def, ClientID: named(clientID)}, true, true},
		{metadata.QuotaEntity{User: def, ClientID: def}, true, true},
		{metadata.QuotaEntity{User: def, ClientID: none}, true, false},
		{metadata.QuotaEntity{User: none, ClientID: named(clientID)}, false, true},
		{metadata.QuotaEntity{User: none, ClientID: def}, false, true},
	}
	for _, o := range order {
		values, found := q.ClientQuota(o.e)
		if !found {
			continue
		}
		v, set := values[key]
		if !set {
			continue
		}
		s = Sensor{Key: key}
		if o.byUser {
			s.User = user
		}
		if o.byClientID {
			s.ClientID = clientID
		}
		return v, s, true
	}
	return 0, Sensor{}, false
}

// Config is how rates are measured: quota.window.num samples of
// quota.window.size.seconds each.
type Config struct {
	Samples  int
	WindowMs int64
}

// sample is one window of a rate: Kafka's SampledStat.Sample.
type sample struct {
	startMs int64
	value   float64
}

// rate is the sampled rate of one sensor.
type rate struct {
	samples []sample
	current int
	lastMs  int64
}

func (r *rate) record(cfg Config, value float64, nowMs int64) {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{startMs: nowMs})
	}
	cur := &r.samples[r.current]
	if nowMs-cur.startMs >= cfg.WindowMs {
		r.current = (r.current + 1) % cfg.Samples
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{})
		}
		cur = &r.samples[r.current]
		*cur = sample{startMs: nowMs}
	}
	cur.value += value
	r.lastMs = nowMs
}

// purge resets samples older than the whole window, so an idle client's
// old usage stops counting.
func (r *rate) purge(cfg Config, nowMs int64) {
	expire := int64(cfg.Samples) * cfg.WindowMs
	for i := range r.samples {
		if nowMs-r.samples[i].startMs >= expire {
			r.samples[i] = sample{startMs: nowMs}
		}
	}
}

// windowMs is the time the rate is measured over: from the oldest sample
// to now, but never less than Samples-1 whole windows, so a client's
// first burst is averaged over the full window rather than a few
// milliseconds (Kafka's Rate.windowSize).
func (r *rate) windowMs(cfg Config, nowMs int64) int64 {
	r.purge(cfg, nowMs)
	oldest := nowMs
	for _, s := range r.samples {
		oldest = min(oldest, s.startMs)
	}
	elapsed := nowMs - oldest
	full := elapsed / cfg.WindowMs
	if minFull := int64(cfg.Samples - 1); full < minFull {
		elapsed += (minFull - full) * cfg.WindowMs
	}
	return max(elapsed, 1)
}

// perSecond is the measured rate per second.
func (r *rate) perSecond(cfg Config, nowMs int64) float64 {
	w := r.windowMs(cfg, nowMs)
	var total float64
	for _, s := range r.samples {
		total += s.value
	}
	return total * 1000 / float64(w)
}

// Manager counts usage per sensor. It is not safe for concurrent use.
type Manager struct {
	cfg     Config
	sensors map[Sensor]*rate
	records int
}

// NewManager returns a manager measuring rates as cfg says.
func NewManager(cfg Config) *Manager {
	cfg.Samples = max(cfg.Samples, 1)
	cfg.WindowMs = max(cfg.WindowMs, 1)
	return &Manager{cfg: cfg, sensors: map[Sensor]*rate{}}
}

// sweepEvery is how many records pass between sweeps of idle sensors.
const sweepEvery = 1024

// Record counts value (bytes, or request-time percent) against the quota
// of key that applies to user and clientID, and returns how long, in
// milliseconds, the client must be throttled: 0 when it is within its
// quota or has none. As in Kafka the usage is counted first, and a client
// over its bound is throttled for the time that brings its rate back to
// the bound, (rate - bound) / bound × window, at most one window.
func (m *Manager) Record(q Lookup, key, user, clientID string, value float64, nowMs int64) int64 {
	bound, s, ok := Resolve(q, key, user, clientID)
	if !ok {
		return 0
	}
	m.sweep(nowMs)
	r := m.sensors[s]
	if r == nil {
		r = &rate{}
		m.sensors[s] = r
	}
	r.record(m.cfg, value, nowMs)
	observed := r.perSecond(m.cfg, nowMs)
	if observed <= bound {
		return 0
	}
	if bound <= 0 {
		return m.cfg.WindowMs
	}
	t := (observed - bound) / bound * float64(r.windowMs(m.cfg, nowMs))
	return min(int64(math.Round(t)), m.cfg.WindowMs)
}

// sweep drops sensors idle for longer than the whole window: their
// samples would all be purged anyway, and a broker seeing many client ids
// must not keep one per id forever.
func (m *Manager) sweep(nowMs int64) {
	m.records++
	if m.records%sweepEvery != 0 {
		return
	}
	expire := int64(m.cfg.Samples) * m.cfg.WindowMs
	for s, r := range m.sensors {
		if nowMs-r.lastMs >= expire {
			delete(m.sensors, s)
		}
	}
}

// Sensors is the number of sensors held, for tests and metrics.
func (m *Manager) Sensors() int { return len(m.sensors) }
