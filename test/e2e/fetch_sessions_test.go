package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/node"
)

// sessionFetch builds a Fetch v12 (topics by name) of partitions of topic,
// each at its offset, in session id/epoch, that answers at once.
func sessionFetch(id, epoch int32, topic string, offsets map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.SessionID, req.SessionEpoch = id, epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 0, 1<<20
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p := range int32(8) {
			off, ok := offsets[p]
			if !ok {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = topic, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// answered lists the partitions a Fetch answer carries, with their high
// watermarks.
func answered(resp *kmsg.FetchResponse) map[int32]int64 {
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.HighWatermark
		}
	}
	return out
}

// TestFetchSessions drives KIP-227 over a raw connection: a full fetch at
// epoch 0 opens a session; an incremental fetch sends no partitions and
// gets only those with news; forgotten partitions leave the session; a
// wrong epoch or an unknown session id gets the session errors.
func TestFetchSessions(t *testing.T) {
	tb := startBroker(t)
	const topic = "sessions"
	tb.createTopic(topic, 3, nil)
	cl := tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testContext(t, 30*time.Second)
	produce := func(p int32) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c := dialRaw(t, tb.addr)
	corr := int32(0)
	fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		corr++
		c.send(req, corr)
		return c.receive(req, corr).(*kmsg.FetchResponse)
	}

	full := fetch(sessionFetch(0, 0, topic, map[int32]int64{0: 0, 1: 0, 2: 0}))
	if full.ErrorCode != 0 || full.SessionID == 0 {
		t.Fatalf("full fetch at epoch 0: error %d, session %d; want a session", full.ErrorCode, full.SessionID)
	}
	if got := answered(full); len(got) != 3 {
		t.Fatalf("full fetch answered %v, want all 3 partitions", got)
	}
	id := full.SessionID

	idle := fetch(sessionFetch(id, 1, topic, nil))
	if idle.ErrorCode != 0 || idle.SessionID != id {
		t.Fatalf("incremental fetch: error %d, session %d (want %d)", idle.ErrorCode, idle.SessionID, id)
	}
	if got := answered(idle); len(got) != 0 {
		t.Fatalf("idle incremental fetch answered %v, want nothing", got)
	}

	produce(1)
	news := fetch(sessionFetch(id, 2, topic, nil))
	if got := answered(news); len(got) != 1 || got[1] != 1 {
		t.Fatalf("incremental fetch after a produce to partition 1 answered %v, want only 1 (hw 1)", got)
	}
	if len(news.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatal("incremental fetch carried partition 1 without its record")
	}

	// The client moves partition 1 on to offset 1 and forgets partition 2;
	// a produce to 2 is then no news for this session.
	produce(2)
	moved := fetch(sessionFetch(id, 3, topic, map[int32]int64{1: 1}, 2))
	if got := answered(moved); len(got) != 0 {
		t.Fatalf("after forgetting partition 2 the session answered %v, want nothing", got)
	}
	produce(0)
	if got := answered(fetch(sessionFetch(id, 4, topic, nil))); len(got) != 1 || got[0] != 1 {
		t.Fatalf("after a produce to partition 0 the session answered %v, want only 0", got)
	}

	if r := fetch(sessionFetch(id, 4, topic, nil)); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("replayed epoch: error %d, want INVALID_FETCH_SESSION_EPOCH", r.ErrorCode)
	}
	if r := fetch(sessionFetch(id+1, 1, topic, nil)); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session: error %d, want FETCH_SESSION_ID_NOT_FOUND", r.ErrorCode)
	}
	// Epoch -1 closes the session and fetches without one.
	closing := fetch(sessionFetch(id, -1, topic, map[int32]int64{2: 0}))
	if closing.ErrorCode != 0 || closing.SessionID != 0 || len(answered(closing)) != 1 {
		t.Fatalf("final epoch: error %d, session %d, answered %v", closing.ErrorCode, closing.SessionID, answered(closing))
	}
	if r := fetch(sessionFetch(id, 5, topic, nil)); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session still served: error %d", r.ErrorCode)
	}
}

// TestFetchSessionsKafkaGoClient: kafka-go's Client.Fetch sends session -1
// and epoch -1 (a sessionless full fetch) and must read the records.
func TestFetchSessionsKafkaGoClient(t *testing.T) {
	tb := startBroker(t)
	const topic = "kafkago-client-fetch"
	tb.createTopic(topic, 1, nil)
	ctx := testContext(t, 30*time.Second)
	cl := tb.client()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("one")}, &kgo.Record{Topic: topic, Value: []byte("two")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kc := &kafka.Client{Addr: kafka.TCP(tb.addr)}
	resp, err := kc.Fetch(context.Background(), &kafka.FetchRequest{
		Addr: kafka.TCP(tb.addr), Topic: topic, Partition: 0, Offset: 0, MinBytes: 1, MaxBytes: 1 << 20,
	})
	if err != nil {
		t.Fatalf("kafka-go Client.Fetch: %v", err)
	}
	if resp.Error != nil {
		t.Fatalf("kafka-go Client.Fetch: %v", resp.Error)
	}
	var got []string
	for {
		r, err := resp.Records.ReadRecord()
		if err != nil {
			break
		}
		b := make([]byte, 16)
		n, _ := r.Value.Read(b)
		got = append(got, string(b[:n]))
	}
	if len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Fatalf("kafka-go Client.Fetch read %q, want [one two]", got)
	}
}

// gaugeValue reads one unlabelled gauge or counter from a broker's
// registry, -1 if absent.
func gaugeValue(t testing.TB, b *node.Broker, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metrics
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// TestFollowerFetchSessions: followers fetch within sessions (KIP-227), so
// an idle follower fetch carries no partitions. Every leader holds its
// followers' sessions, covering every partition it leads once per
// follower, and the sessions stay the same over many idle fetch rounds (a
// session the leader refused would be replaced by a new one).
func TestFollowerFetchSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c := startCluster(t, 3, nil)
	haltAllAtEnd(t, c)
	adm := observerClient(t, c.addrs())
	const topic, partitions = "follower-sessions", 6
	createReplicatedTopic(ctx, t, adm, topic, partitions, 3, nil)
	led := map[int32]int{}
	for p := range int32(partitions) {
		v, err := describePartition(ctx, adm, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		led[v.Leader]++
	}

	sessionsOf := func(i int) (sessions, cached float64) {
		return gaugeValue(t, c.brokers[i], "skein_incremental_fetch_sessions"),
			gaugeValue(t, c.brokers[i], "skein_incremental_fetch_partitions_cached")
	}
	followerFetches := func(i int) float64 {
		return gaugeValue(t, c.brokers[i], "skein_requests_total", "api", "FetchFollower", "error", "NONE")
	}
	// Wait until every leader holds sessions covering what it leads.
	before := make([][2]float64, 3)
	for i := range c.brokers {
		want := float64(2 * led[int32(i+1)])
		for {
			s, p := sessionsOf(i)
			if s >= 2 && p >= want {
				before[i] = [2]float64{s, p}
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("broker %d holds %v sessions with %v partitions; want 2 sessions covering %v", i+1, s, p, want)
			case <-time.After(externalPollInterval):
			}
		}
	}
	// Twenty more idle fetch rounds from each follower.
	for i := range c.brokers {
		start := followerFetches(i)
		for followerFetches(i) < start+20 {
			select {
			case <-ctx.Done():
				t.Fatalf("broker %d: follower fetches stalled", i+1)
			case <-time.After(externalPollInterval):
			}
		}
	}
	for i := range c.brokers {
		if s, p := sessionsOf(i); s != before[i][0] || p != before[i][1] {
			t.Errorf("broker %d: sessions went from %v (%v partitions) to %v (%v): followers' incremental fetches were refused", i+1, before[i][0], before[i][1], s, p)
		}
	}
}
