package e2e

import (
	"context"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// metricSum sums a broker metric over the series whose label has
// value (any series when label is "").
func metricSum(t *testing.T, tb *testBroker, name, label, value string) (float64, bool) {
	t.Helper()
	mfs, err := tb.b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		total := 0.0
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					match = true
				}
			}
			if match {
				total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
		return total, true
	}
	return 0, false
}

// awaitMetric waits until the metric reaches at least want. Between
// looks it round-trips a request, which lets the broker's connection
// goroutines run, or, with yieldOnly (when the request budget may be
// spent, so a request would wait behind what is measured), only yields.
func awaitMetric(t *testing.T, tb *testBroker, name, label, value string, want float64, yieldOnly bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, ok := metricSum(t, tb, name, label, value)
		if ok && got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{%s=%q} = %v (exists: %v), waited for at least %v", name, label, value, got, ok, want)
		}
		if yieldOnly {
			runtime.Gosched()
		} else {
			roundTrip(t, tb.addr)
		}
	}
}

// TestStalledFetchReadersMemoryBounded is the 200-connection fetch attack
// scaled down: connections each pipeline two Fetches asking 50 MiB of a
// partition holding 8 MiB, with a tiny receive buffer, and never read. The
// answers the broker holds unwritten must stay within
// fetch.response.max.inflight.bytes (plus one batch per connection), not
// one copy of the partition per request.
func TestStalledFetchReadersMemoryBounded(t *testing.T) {
	const budget = 16 << 20
	tb := startBroker(t, withProp("fetch.response.max.inflight.bytes", strconv.Itoa(budget)))
	tb.createTopic("stalled-readers", 1, nil)
	p := dialRaw(t, tb.addr)
	const batches, batchBytes = 32, 256 << 10
	for i := range batches {
		res := produceResult(t, p, produceRequest(7, 1, "stalled-readers", 0, recordsBatch(16, batchBytes/16)), int32(i))
		if res.ErrorCode != 0 {
			t.Fatalf("produce %d: error %d", i, res.ErrorCode)
		}
	}
	p.nc.Close()
	before := heapInUse()

	const conns = 12
	for i := range conns {
		c := dialRaw(t, tb.addr)
		c.nc.(*net.TCPConn).SetReadBuffer(4 << 10)
		for j := range 2 {
			f := fetchAtEnd("stalled-readers", 0, 0)
			f.MaxBytes = 50 << 20
			f.Topics[0].Partitions[0].PartitionMaxBytes = 50 << 20
			c.send(f, int32(i*2+j))
		}
	}
	// Every connection's first fetch is answered (its second may wait for
	// the first to be written, which never happens).
	awaitMetric(t, tb, "skein_requests_total", "api", "FetchConsumer", conns, false)
	grew := int64(heapInUse()) - int64(before)
	t.Logf("%d connections × 2 fetches of 50 MiB for an 8 MiB partition, never read: heap grew %d MiB (budget %d MiB)", conns, grew>>20, budget>>20)
	// The budget charges the bytes asked for; the pooled buffer holding
	// them is up to 25% larger (internal/bufpool's size classes).
	if limit := int64(budget*5/4 + conns*2*batchBytes + 16<<20); grew > limit {
		t.Fatalf("heap grew by %d MiB, over the fetch budget's %d MiB", grew>>20, limit>>20)
	}
	tb.createTopic("stalled-readers-after", 1, nil)
	requireServing(t, tb, "stalled-readers-after", 20)
	consumeCount(t, tb, "stalled-readers", batches*16)
}

// TestRequestBytesBudget: connections that each send most of a 16 MiB
// frame and then stop hold what they sent. Over all connections that
// stays within queued.max.request.bytes; the rest wait (TCP
// back-pressure) and are closed at socket.request.read.timeout.ms, after
// which the broker serves again.
func TestRequestBytesBudget(t *testing.T) {
	const budget, frame = 32 << 20, 16 << 20
	tb := startBroker(t,
		withProp("queued.max.request.bytes", strconv.Itoa(budget)),
		withProp("socket.request.max.bytes", strconv.Itoa(frame)),
		withProp("socket.request.read.timeout.ms", "5000"))
	tb.createTopic("request-budget", 1, nil)
	requireServing(t, tb, "request-budget", 20)
	body := make([]byte, 12<<20) // not the whole frame: the sender stalls after it
	before := heapInUse()

	const conns = 20
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range conns {
		c := dialRaw(t, tb.addr)
		go func() {
			c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			c.nc.Write(append(sizePrefix(frame), 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff))
			c.nc.Write(body)
			<-ctx.Done()
		}()
	}
	// The budget fills up to within one buffer growth (at most half a frame).
	awaitMetric(t, tb, "skein_request_bytes_in_use", "", "", budget-frame/2, true)
	grew := int64(heapInUse()) - int64(before)
	t.Logf("%d connections sending 12 of 16 MiB each: heap grew %d MiB (queued.max.request.bytes %d MiB)", conns, grew>>20, budget>>20)
	if limit := int64(budget + 16<<20); grew > limit {
		t.Fatalf("heap grew by %d MiB, over queued.max.request.bytes (%d MiB) and slack", grew>>20, budget>>20)
	}
	// The stalled frames time out and the broker serves real clients again.
	tb.createTopic("request-budget-after", 1, nil)
	requireServing(t, tb, "request-budget-after", 20)
	consumeCount(t, tb, "request-budget", 20)
}

// allocatedDuring is the bytes the process allocated while f ran (the
// broker runs in this process): a bound on the peak a request can cause.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeAmplificationBounded: a Metadata v12 request naming a million
// topic ids is a 17 MB frame, but kmsg decodes every element and the
// handler answers each one: serving it allocated hundreds of MB. The
// broker refuses requests with more than wire.MaxRequestElements array
// elements before any handler runs, so the cost stays near the frame's.
func TestDecodeAmplificationBounded(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("amplified", 1, nil)
	requireServing(t, tb, "amplified", 10)

	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = make([]kmsg.MetadataRequestTopic, 1_000_000)
	for i := range req.Topics {
		req.Topics[i] = kmsg.NewMetadataRequestTopic()
		req.Topics[i].TopicID[0], req.Topics[i].TopicID[1], req.Topics[i].TopicID[2] = byte(i), byte(i>>8), byte(i>>16)
	}
	frame := rawRequestFrame(req, 1)
	req = nil
	c := dialRaw(t, tb.addr)
	alloc := allocatedDuring(func() {
		if err := c.write(frame); err != nil {
			t.Fatal(err)
		}
		c.expectClosed()
	})
	t.Logf("Metadata v12 with 1,000,000 topic ids (%d MiB frame): %d MiB allocated while it was served", len(frame)>>20, alloc>>20)
	if limit := uint64(len(frame)) * 8; alloc > limit {
		t.Fatalf("serving a %d MiB request allocated %d MiB (over %d MiB)", len(frame)>>20, alloc>>20, limit>>20)
	}
	tb.createTopic("amplified-after", 1, nil)
	requireServing(t, tb, "amplified-after", 10)
	consumeCount(t, tb, "amplified", 10)
}
