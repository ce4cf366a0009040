package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// eosClusterProps configures the 3-broker clusters of the exactly-once
// tests: small __consumer_offsets and __transaction_state (quick to
// start on two cores), no initial rebalance delay, and sessions as short
// as clientGroupSession allowed, so a member gone is noticed quickly.
var eosClusterProps = map[string]string{
	"offsets.topic.num.partitions":         "3",
	"transaction.state.log.num.partitions": "3",
	"group.min.session.timeout.ms":         "1000",
	"group.initial.rebalance.delay.ms":     "0",
}

// TestTxnGroupTransactSessionExactlyOnce: franz-go's GroupTransactSession
// reads one topic, writes each record to another and commits its group's
// offsets in the same transaction (TxnOffsetCommit), on a 3-broker
// cluster. Every input record is in the read_committed output exactly
// once and the group's committed offsets are the input's end offsets,
// also when the session's member is closed with a transaction open and
// another one, with the same transactional id, takes over (its
// InitProducerId aborts the open transaction; the group's offsets only
// move with committed transactions).
func TestTxnGroupTransactSessionExactlyOnce(t *testing.T) {
	requirePartitionSide(t)
	c := startCluster(t, 3, eosClusterProps)
	adm := kadm.NewClient(c.client())
	for _, tc := range []struct {
		name   string
		closed bool
	}{{"one session", false}, {"closed mid-way", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t, 60*time.Second)
			in, out, grp := "eos-in-"+strconv.FormatBool(tc.closed), "eos-out-"+strconv.FormatBool(tc.closed), "eos-"+strconv.FormatBool(tc.closed)
			createReplicatedTopic(ctx, t, adm, in, 3, 3, nil)
			createReplicatedTopic(ctx, t, adm, out, 3, 3, nil)
			const n = 300
			recs := make([]*kgo.Record, n)
			for i := range recs {
				v := []byte(fmt.Sprintf("v%03d", i))
				recs[i] = &kgo.Record{Topic: in, Key: v, Value: v} // keyed: spread over the partitions
			}
			if err := c.client().ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce input: %v", err)
			}
			session := func() *kgo.GroupTransactSession {
				s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.addrs()...),
					kgo.TransactionalID("eos-"+grp), kgo.TransactionTimeout(20*time.Second),
					kgo.ConsumerGroup(grp), kgo.ConsumeTopics(in),
					kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic(out))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Close)
				return s
			}
			done := 0
			if tc.closed {
				first := session()
				done = transform(ctx, t, first, n/2)
				// A transaction with output written but not ended: the
				// member goes, the next session's InitProducerId aborts it.
				fs := first.PollRecords(ctx, 20)
				if err := first.Begin(); err != nil {
					t.Fatal(err)
				}
				produced := 0
				fs.EachRecord(func(r *kgo.Record) {
					if err := first.Client().ProduceSync(ctx, &kgo.Record{Key: r.Key, Value: r.Value}).FirstErr(); err != nil {
						t.Fatalf("produce in the open transaction: %v", err)
					}
					produced++
				})
				if produced == 0 {
					t.Fatal("no input left for the open transaction")
				}
				first.Close()
			}
			done += transform(ctx, t, session(), n-done)
			if done != n {
				t.Fatalf("transformed %d records, want %d", done, n)
			}

			ends, err := adm.ListEndOffsets(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			committed := stableOffsets(ctx, t, c.client(), grp, in)
			ends.Each(func(e kadm.ListedOffset) {
				// A partition nothing was read from has no commit.
				if got, ok := committed[e.Partition]; ok && got != e.Offset || !ok && e.Offset != 0 {
					t.Errorf("%s-%d: committed %d (%v), want the end offset %d", in, e.Partition, got, ok, e.Offset)
				}
			})
			counts := readCommittedOutput(ctx, t, c, out)
			for i := range n {
				if v := fmt.Sprintf("v%03d", i); counts[v] != 1 {
					t.Errorf("output holds %s %d times, want once", v, counts[v])
				}
			}
			if len(counts) != n+1 { // the values and the end sentinel
				t.Errorf("output holds %d distinct values, want %d", len(counts)-1, n)
			}
		})
	}
}

// stableOffsets fetches grp's committed offsets of the three partitions of
// topic with require_stable (OffsetFetch v7+): the last transaction's offsets are pending until its
// marker reaches __consumer_offsets, which may be after EndTxn's answer,
// and the broker answers UNSTABLE_OFFSET_COMMIT until then; the request
// is sent again until no partition is unstable, as clients do.
func stableOffsets(ctx context.Context, t *testing.T, cl *kgo.Client, grp, topic string) map[int32]int64 {
	t.Helper()
	for {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = grp, true
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0, 1, 2}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("OffsetFetch: %v %+v", err, resp)
		}
		out, unstable := map[int32]int64{}, false
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				switch rp.ErrorCode {
				case 0:
					if rp.Offset >= 0 {
						out[rp.Partition] = rp.Offset
					}
				case kerr.UnstableOffsetCommit.Code:
					unstable = true
				default:
					t.Fatalf("OffsetFetch %s-%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
				}
			}
		}
		if !unstable {
			return out
		}
	}
}

// transform runs sess's consume-transform-produce loop until want input
// records are in committed transactions, and returns how many were.
func transform(ctx context.Context, t *testing.T, sess *kgo.GroupTransactSession, want int) int {
	t.Helper()
	done := 0
	for done < want {
		fs := sess.PollRecords(ctx, want-done)
		if ctx.Err() != nil {
			t.Fatalf("transformed %d of %d records", done, want)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce output: %v", err)
				}
			})
			n++
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("end transaction: %v", err)
		}
		if committed {
			done += n
		}
	}
	return done
}

// readCommittedOutput counts the values of topic seen by a read_committed
// consumer, up to a sentinel produced at the end of every partition after
// the transactions: everything before it has been read once it is seen.
func readCommittedOutput(ctx context.Context, t *testing.T, c *testCluster, topic string) map[string]int {
	t.Helper()
	const sentinel = "end"
	p := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for part := range int32(3) {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(sentinel)}).FirstErr(); err != nil {
			t.Fatalf("produce sentinel: %v", err)
		}
	}
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	counts := map[string]int{}
	for counts[sentinel] < 3 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed reached %d of 3 sentinels", counts[sentinel])
		}
		fs.EachRecord(func(r *kgo.Record) { counts[string(r.Value)]++ })
	}
	return counts
}
