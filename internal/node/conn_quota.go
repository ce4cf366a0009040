package node

import (
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/quota"
)

// anonymousUser is the principal of a client that did not authenticate,
// as Kafka names it; user quotas of "ANONYMOUS" (or the default user)
// apply to such clients.
const anonymousUser = "ANONYMOUS"

// quotaUser is the user a request's quotas are looked up by: the name of
// the principal the connection authenticated as (SASL or a TLS
// certificate), ANONYMOUS without authentication.
func quotaUser(p api.Principal) string {
	if p.Name == "" {
		return anonymousUser
	}
	return p.Name
}

// brokerQuotas is the broker's client quota accounting: the quota core
// behind a lock, fed the clock. Rates are per broker, as in Kafka: a
// client spreading its load over three brokers may use three times its
// quota in total.
type brokerQuotas struct {
	mu sync.Mutex
	m  *quota.Manager
}

// record counts value against key's quota and returns the throttle time.
func (b *Broker) quotaRecord(im *metadata.Image, key, user, clientID string, value float64) time.Duration {
	q := &b.quotas
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = quota.NewManager(quota.Config{
			Samples:  b.cfg.QuotaWindowNum,
			WindowMs: int64(b.cfg.QuotaWindowSizeSeconds) * 1000,
		})
	}
	return time.Duration(q.m.Record(im, key, user, clientID, value, time.Now().UnixMilli())) * time.Millisecond
}

// requestQuota follows one request through its handler: the bytes it
// produced or fetched and the handler time it took are counted against
// the client's quotas when it is answered.
type requestQuota struct {
	c     *conn
	req   *api.Request
	start time.Time
	// exempt: controller listeners (brokers and voters) and follower
	// fetches are never throttled, so replication cannot starve behind
	// a client's quota; admin requests that wait for a commit are not
	// charged request time for the wait.
	exempt      bool
	chargeTime  bool
	servedNanos atomic.Int64 // the handler's own time, once Serve returned; 0 before
}

func (c *conn) startQuota(req *api.Request, spec api.Spec, start time.Time) *requestQuota {
	q := &requestQuota{c: c, req: req, start: start, chargeTime: !spec.Blocking}
	if c.controller || req.Principal == api.BrokerPrincipal {
		q.exempt = true
	}
	if f, ok := req.Body.(*kmsg.FetchRequest); ok {
		replica := f.ReplicaID
		if f.Version >= 15 {
			replica = f.ReplicaState.ID
		}
		q.exempt = q.exempt || replica >= 0
	}
	return q
}

// served marks the end of the handler's synchronous part: an answer that
// comes later (acks=all, a long poll) was waited for, not worked on.
func (q *requestQuota) served() {
	q.servedNanos.Store(max(int64(time.Since(q.start)), 1))
}

// throttle charges the request to its client's quotas and, when the
// client is over one, sets the answer's throttle_time_ms and mutes the
// connection for that long (KIP-219): the client is told, and a client
// that ignores it is not read from meanwhile.
func (q *requestQuota) throttle(resp kmsg.Response) kmsg.Response {
	if q.exempt {
		return resp
	}
	im := q.c.b.Image()
	if !im.HasClientQuotas() {
		return resp
	}
	user, clientID := quotaUser(q.req.Principal), q.req.ClientID
	var t time.Duration
	switch body := q.req.Body.(type) {
	case *kmsg.ProduceRequest:
		t = max(t, q.c.b.quotaRecord(im, metadata.QuotaProducerByteRate, user, clientID, float64(produceBytes(body))))
	case *kmsg.FetchRequest:
		if fr, ok := resp.(*kmsg.FetchResponse); ok {
			t = max(t, q.c.b.quotaRecord(im, metadata.QuotaConsumerByteRate, user, clientID, float64(fetchBytes(fr))))
		}
	}
	if q.chargeTime {
		d := time.Duration(q.servedNanos.Load())
		if d == 0 {
			d = time.Since(q.start)
		}
		// Kafka's request quota is a percentage of one thread's time:
		// 10 ms of handling in a second is 1%.
		t = max(t, q.c.b.quotaRecord(im, metadata.QuotaRequestPercentage, user, clientID, float64(d)*100/float64(time.Second)))
	}
	if t <= 0 {
		return resp
	}
	q.c.mute(t)
	if resp != nil {
		setThrottleMillis(resp, int32(t/time.Millisecond))
	}
	return resp
}

// produceBytes is what a Produce carries: its record batches.
func produceBytes(p *kmsg.ProduceRequest) int {
	n := 0
	for _, t := range p.Topics {
		for _, pp := range t.Partitions {
			n += len(pp.Records)
		}
	}
	return n
}

// fetchBytes is what a Fetch answer carries: its record batches.
func fetchBytes(f *kmsg.FetchResponse) int {
	n := 0
	for _, t := range f.Topics {
		for _, p := range t.Partitions {
			n += len(p.RecordBatches)
		}
	}
	return n
}

// mute stops reading from the connection for d from now (or longer, if
// an earlier throttle ends later).
func (c *conn) mute(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// awaitUnmuted holds a request read from a throttled client until its
// throttle ends, so the client's next request is served only after it.
// It returns false when the broker stops meanwhile.
func (c *conn) awaitUnmuted() bool {
	for {
		d := time.Until(time.Unix(0, c.mutedUntil.Load()))
		if d <= 0 {
			return true
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-c.b.stop:
			timer.Stop()
			return false
		}
	}
}

// setThrottleMillis raises the ThrottleMillis field every kmsg response
// with a throttle_time_ms has; a request throttled by several quotas
// reports the longest throttle, as Kafka does.
func setThrottleMillis(resp kmsg.Response, ms int32) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	f := v.Elem().FieldByName("ThrottleMillis")
	if !f.IsValid() || !f.CanSet() || f.Kind() != reflect.Int32 {
		return
	}
	if int32(f.Int()) < ms {
		f.SetInt(int64(ms))
	}
}
