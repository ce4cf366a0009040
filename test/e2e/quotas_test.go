package e2e

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttleCounter counts the throttles a franz-go client was told of.
type throttleCounter struct {
	mu    sync.Mutex
	count int
	max   time.Duration
	total time.Duration
}

func (h *throttleCounter) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, after bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if d > 0 {
		h.count++
		h.total += d
		h.max = max(h.max, d)
	}
}

func (h *throttleCounter) get() (int, time.Duration, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count, h.max, h.total
}

func clientIDEntity(name string) kadm.ClientQuotaEntity {
	return kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr(name)}}
}

// TestClientQuotaThrottling: a client id limited to 1 MiB/s by
// AlterClientQuotas (sent to a broker that is not the controller, so it
// is forwarded) takes about 4 s for 5 MiB, and is told of the throttle in
// throttle_time_ms; another client id on the same broker is not slowed.
// A default client-id consumer_byte_rate throttles a consumer likewise.
// Two one-second quota windows, so the first burst the window absorbs is
// 1 MiB rather than the 10 MiB of Kafka's default 11 windows.
func TestClientQuotaThrottling(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startCluster(t, 3, map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1"})
	haltAllAtEnd(t, c)
	adm := kadm.NewClient(c.client())
	createReplicatedTopic(ctx, t, adm, "quota-t", 1, 3, nil)
	leader := c.leaderOf(ctx, "quota-t", 0)
	ctrl := awaitActiveController(ctx, t, c, func(int32) bool { return true })

	const rate = 1 << 20
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	entry.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: kmsg.StringPtr("limited")}}
	entry.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: rate}}
	alter.Entries = append(alter.Entries, entry)
	// Sent to the partition's leader, which answers once its own image
	// has the quota; when the leader is the controller, through another
	// broker first to exercise forwarding as well.
	via := []int32{leader}
	if leader == ctrl {
		via = append([]int32{otherBrokers(3, ctrl)[0]}, leader)
	}
	for _, id := range via {
		raw := newSeededClient(t, []string{c.addrs()[id-1]})
		resp, err := alter.RequestWith(ctx, raw)
		if err != nil {
			t.Fatalf("AlterClientQuotas via broker %d: %v", id, err)
		}
		if len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != 0 {
			t.Fatalf("AlterClientQuotas via broker %d: %+v", id, resp.Entries)
		}
	}

	payload := make([]byte, 64<<10)
	rand.Read(payload)
	produce := func(clientID string) (time.Duration, *throttleCounter) {
		h := &throttleCounter{}
		cl := c.client(kgo.ClientID(clientID), kgo.WithHooks(h), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ProducerBatchMaxBytes(256<<10))
		// Warm up metadata and the connection outside the measurement.
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "quota-t", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var wg sync.WaitGroup
		var firstErr error
		var mu sync.Mutex
		for range 80 { // 80 × 64 KiB = 5 MiB
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: "quota-t", Value: payload}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if firstErr != nil {
			t.Fatalf("%s: produce: %v", clientID, firstErr)
		}
		return time.Since(start), h
	}

	took, h := produce("limited")
	n, maxThrottle, total := h.get()
	t.Logf("limited: 5 MiB in %v, %d throttles (max %v, total %v)", took, n, maxThrottle, total)
	if n == 0 {
		t.Fatal("a client over its producer_byte_rate was never told of a throttle")
	}
	if maxThrottle > time.Second {
		t.Errorf("a throttle of %v exceeds one quota window", maxThrottle)
	}
	// 5 MiB at 1 MiB/s, of which the first window absorbs 1 MiB: the
	// throttles must add up to most of the remaining 4 s.
	if total < 2500*time.Millisecond || took < 3*time.Second {
		t.Errorf("throttled for %v in total, 5 MiB took %v: want about 4 s of each", total, took)
	}

	took, h = produce("free")
	n, _, _ = h.get()
	t.Logf("free: 5 MiB in %v, %d throttles", took, n)
	if n != 0 {
		t.Errorf("a client id without a quota was throttled %d times", n)
	}

	// consumer_byte_rate on a default client id: each consumer is held
	// to it on its own. The topic now holds 10 MiB and a bit.
	entry.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id"}}
	entry.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "consumer_byte_rate", Value: 4 * rate}}
	alter.Entries = []kmsg.AlterClientQuotasRequestEntry{entry}
	if resp, err := alter.RequestWith(ctx, newSeededClient(t, []string{c.addrs()[leader-1]})); err != nil || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas: %v %+v", err, resp)
	}
	consume := func(clientID string) (time.Duration, *throttleCounter) {
		h := &throttleCounter{}
		cl := c.client(kgo.ClientID(clientID), kgo.WithHooks(h), kgo.ConsumeTopics("quota-t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		start := time.Now()
		got := 0
		for got < 162 { // 2 warm-up records and 160 of 64 KiB
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: consume: %v", clientID, err)
			}
			got += fs.NumRecords()
		}
		return time.Since(start), h
	}
	took, h = consume("reader")
	n, maxThrottle, total = h.get()
	t.Logf("reader: 10 MiB in %v, %d throttles (max %v, total %v)", took, n, maxThrottle, total)
	// 10 MiB at 4 MiB/s, of which the first window absorbs 4 MiB.
	if n == 0 || total < time.Second || took < time.Second {
		t.Errorf("a consumer over its consumer_byte_rate: %d throttles, %v in total, took %v", n, total, took)
	}
}

// TestClientQuotasAdmin: AlterClientQuotas and DescribeClientQuotas with
// Kafka's semantics: validate_only stores nothing, bad keys and values
// are INVALID_REQUEST per entry, defaults and combinations are described
// with their filters, and a removal drops the entity.
func TestClientQuotasAdmin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startCluster(t, 3, nil)
	haltAllAtEnd(t, c)
	ctrl := awaitActiveController(ctx, t, c, func(int32) bool { return true })
	// Through a non-controller: every alter is forwarded.
	adm := kadm.NewClient(newSeededClient(t, []string{c.addrs()[otherBrokers(3, ctrl)[0]-1]}))

	alice := kadm.ClientQuotaEntity{{Type: "user", Name: kmsg.StringPtr("alice")}}
	aliceDefaultClient := kadm.ClientQuotaEntity{{Type: "user", Name: kmsg.StringPtr("alice")}, {Type: "client-id"}}
	defaultClient := kadm.ClientQuotaEntity{{Type: "client-id"}}

	v, err := adm.ValidateAlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: alice, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}}}})
	if err != nil || v[0].Err != nil {
		t.Fatalf("validate only: %v %+v", err, v)
	}
	if got, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(got) != 0 {
		t.Fatalf("after validate_only: %v %+v, want nothing stored", err, got)
	}

	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: alice, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}, {Key: "request_percentage", Value: 12.5}}},
		{Entity: aliceDefaultClient, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 2048}}},
		{Entity: defaultClient, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 4096}}},
		{Entity: clientIDEntity("bad-key"), Ops: []kadm.AlterClientQuotaOp{{Key: "no_such_rate", Value: 1}}},
		{Entity: clientIDEntity("fraction"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1.5}}},
		{Entity: clientIDEntity("zero"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 0}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user"}, {Type: "user", Name: kmsg.StringPtr("x")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		wantErr := i >= 3
		if gotErr := r.Err != nil; gotErr != wantErr {
			t.Errorf("entry %d (%s): err %v %q, want error %v", i, r.Entity, r.Err, r.ErrMessage, wantErr)
		}
		if wantErr && !errors.Is(r.Err, kerr.InvalidRequest) {
			t.Errorf("entry %d (%s): err %v, want INVALID_REQUEST", i, r.Entity, r.Err)
		}
	}

	describe := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) []string {
		t.Helper()
		got, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatalf("describe %+v: %v", comps, err)
		}
		var out []string
		for _, q := range got {
			s := q.Entity.String()
			for _, v := range q.Values {
				s += " " + v.String()
			}
			out = append(out, s)
		}
		return out
	}
	all := describe(false)
	want := []string{
		"{client-id=<default>} producer_byte_rate=4096.000000",
		"{user=alice} producer_byte_rate=1024.000000 request_percentage=12.500000",
		"{user=alice, client-id=<default>} consumer_byte_rate=2048.000000",
	}
	if !equalStrings(all, want) {
		t.Fatalf("all quotas:\n%q\nwant\n%q", all, want)
	}
	user := kadm.DescribeClientQuotaComponent{Type: "user", MatchName: kmsg.StringPtr("alice")}
	if got := describe(false, user); len(got) != 2 {
		t.Errorf("user=alice, not strict: %q, want alice's two entities", got)
	}
	if got := describe(true, user); len(got) != 1 || got[0] != want[1] {
		t.Errorf("user=alice, strict: %q, want %q", got, want[1])
	}
	if got := describe(false, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 1}); len(got) != 2 {
		t.Errorf("default client-id: %q, want the two entities with one", got)
	}
	if got := describe(true, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 2}); len(got) != 1 || got[0] != want[0] {
		t.Errorf("any client-id, strict: %q, want %q", got, want[0])
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user"}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("an exact match without a name: %v, want INVALID_REQUEST", err)
	}

	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: aliceDefaultClient, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Remove: true}}}}); err != nil {
		t.Fatal(err)
	}
	if got := describe(false); !equalStrings(got, want[:2]) {
		t.Errorf("after removing alice's default client-id quota: %q", got)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
