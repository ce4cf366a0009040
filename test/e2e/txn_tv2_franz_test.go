package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wireLog records the requests a franz-go client writes, from its debug
// log ("wrote Produce v12"): which KIP-890 part 2 paths it took.
type wireLog struct {
	mu    sync.Mutex
	wrote map[string][]int16 // request name -> versions written
}

func newWireLog() *wireLog { return &wireLog{wrote: map[string][]int16{}} }

func (l *wireLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (l *wireLog) Log(_ kgo.LogLevel, msg string, _ ...any) {
	name, ok := strings.CutPrefix(msg, "wrote ")
	if !ok {
		return
	}
	i := strings.LastIndex(name, " v")
	if i < 0 {
		return
	}
	v, err := strconv.Atoi(name[i+2:])
	if err != nil {
		return
	}
	l.mu.Lock()
	l.wrote[name[:i]] = append(l.wrote[name[:i]], int16(v))
	l.mu.Unlock()
}

// versions are the versions of name written; none if never.
func (l *wireLog) versions(name string) []int16 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int16(nil), l.wrote[name]...)
}

// finalizedTransactionVersion is transaction.version as ApiVersions
// finalizes it (0: not finalized).
func finalizedTransactionVersion(ctx context.Context, t *testing.T, cl kmsg.Requestor) int16 {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			return f.MaxVersionLevel
		}
	}
	return 0
}

// setTransactionVersion finalizes transaction.version at level with
// UpdateFeatures, as `kafka-features upgrade|downgrade` does.
func setTransactionVersion(ctx context.Context, t *testing.T, cl *kgo.Client, level int16, downgrade bool) {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", level, 1
	if downgrade {
		u.UpgradeType = 2
	}
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("UpdateFeatures transaction.version=%d: %v", level, err)
	}
}

// describeEpoch is the transactional id's producer id and epoch at its
// coordinator (DescribeTransactions).
func describeEpoch(ctx context.Context, t *testing.T, cl *kgo.Client, id string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.TransactionStates) != 1 || resp.TransactionStates[0].ErrorCode != 0 {
		t.Fatalf("DescribeTransactions %s: %v %+v", id, err, resp)
	}
	s := resp.TransactionStates[0]
	return s.ProducerID, s.ProducerEpoch
}

// TestTxnFranzTransactionVersions: franz-go's transactional producer, a
// GroupTransactSession and a read_committed consumer, first with
// transaction.version 2 (a new cluster's level, as in Kafka 4.0) and
// then downgraded to 1. At 2 franz-go takes KIP-890 part 2's paths (its
// debug log shows Produce v12+ and TxnOffsetCommit v5 with no
// AddPartitionsToTxn or AddOffsetsToTxn, EndTxn v5) and the coordinator
// bumps the producer epoch at every transaction's end; at 1 the client
// adds partitions and offsets itself, ends with EndTxn v4 and the epoch
// stays. Either way read_committed sees exactly the committed records.
func TestTxnFranzTransactionVersions(t *testing.T) {
	requirePartitionSide(t)
	tb := startBroker(t)
	admin := tb.client()
	for _, tv := range []int16{2, 1} {
		t.Run(fmt.Sprintf("transaction.version=%d", tv), func(t *testing.T) {
			ctx := testContext(t, 60*time.Second)
			if tv == 1 {
				setTransactionVersion(ctx, t, admin, 1, true)
			}
			if got := finalizedTransactionVersion(ctx, t, admin); got != tv {
				t.Fatalf("finalized transaction.version %d, want %d", got, tv)
			}
			topic, id := fmt.Sprintf("tv%d", tv), fmt.Sprintf("tx-tv%d", tv)
			tb.createTopic(topic, 2, nil)
			wl := newWireLog()
			p := tb.client(kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(30*time.Second),
				kgo.WithLogger(wl), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			want := map[string]bool{}
			var pid int64
			var startEpoch int16
			const rounds = 4
			for round := range rounds {
				commit := round != 1
				if err := p.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				for i := range 6 {
					v := fmt.Sprintf("%d-%d-%d", tv, round, i)
					if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
						t.Fatalf("produce: %v", err)
					}
					if commit {
						want[v] = true
					}
				}
				if round == 0 {
					pid, startEpoch = describeEpoch(ctx, t, admin, id)
				}
				if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					t.Fatalf("end transaction %d: %v", round, err)
				}
			}
			gotPID, gotEpoch := describeEpoch(ctx, t, admin, id)
			wantEpoch := startEpoch
			if tv == 2 {
				wantEpoch += rounds // one bump per transaction's end
			}
			if gotPID != pid || gotEpoch != wantEpoch {
				t.Errorf("after %d transactions: producer %d epoch %d, want %d epoch %d", rounds, gotPID, gotEpoch, pid, wantEpoch)
			}

			// Offsets in a transaction: one GroupTransactSession round.
			in, grp := topic+"-in", "grp-"+topic
			tb.createTopic(in, 1, nil)
			var recs []*kgo.Record
			for i := range 10 {
				v := fmt.Sprintf("in-%d-%d", tv, i)
				recs = append(recs, &kgo.Record{Topic: in, Value: []byte(v)})
				want[v] = true
			}
			if err := admin.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(tb.addr), kgo.WithLogger(wl),
				kgo.TransactionalID(id+"-sess"), kgo.TransactionTimeout(20*time.Second),
				kgo.ConsumerGroup(grp), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic(topic))
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			if n := transform(ctx, t, sess, len(recs)); n != len(recs) {
				t.Fatalf("transformed %d, want %d", n, len(recs))
			}
			if off := stableOffsets(ctx, t, admin, grp, in)[0]; off != int64(len(recs)) {
				t.Errorf("group %s committed %d, want %d", grp, off, len(recs))
			}

			for _, name := range []string{"Produce", "EndTxn", "TxnOffsetCommit", "AddPartitionsToTxn", "AddOffsetsToTxn"} {
				t.Logf("%s: versions %v", name, wl.versions(name))
			}
			check := func(name string, ok func(v int16) bool, what string) {
				vs := wl.versions(name)
				if len(vs) == 0 && what != "none" {
					t.Errorf("no %s written, want %s", name, what)
				}
				for _, v := range vs {
					if !ok(v) {
						t.Errorf("%s v%d written, want %s", name, v, what)
						return
					}
				}
			}
			if tv == 2 {
				check("Produce", func(v int16) bool { return v >= 12 }, "v12+")
				check("EndTxn", func(v int16) bool { return v == 5 }, "v5")
				check("TxnOffsetCommit", func(v int16) bool { return v == 5 }, "v5")
				check("AddPartitionsToTxn", func(int16) bool { return false }, "none")
				check("AddOffsetsToTxn", func(int16) bool { return false }, "none")
			} else {
				check("Produce", func(v int16) bool { return v <= 11 }, "at most v11")
				check("EndTxn", func(v int16) bool { return v <= 4 }, "at most v4")
				check("TxnOffsetCommit", func(v int16) bool { return v <= 4 }, "at most v4")
				check("AddPartitionsToTxn", func(v int16) bool { return v <= 3 }, "v3 or below")
				check("AddOffsetsToTxn", func(int16) bool { return true }, "some")
			}

			consumeCommitted(t, tb.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchIsolationLevel(kgo.ReadCommitted())), want)
		})
	}
}

// useTransactionVersion1 finalizes transaction.version 1 (a downgrade from
// a new cluster's 2) and waits until each of the brokers answers it in
// ApiVersions: the tests of the version 1 protocol speak it with
// whatever request versions their client negotiates.
func useTransactionVersion1(ctx context.Context, t *testing.T, cl *kgo.Client, brokers ...int32) {
	t.Helper()
	setTransactionVersion(ctx, t, cl, 1, true)
	for _, id := range brokers {
		for finalizedTransactionVersion(ctx, t, cl.Broker(int(id))) != 1 {
			select {
			case <-ctx.Done():
				t.Fatalf("broker %d never finalized transaction.version 1", id)
			case <-time.After(externalPollInterval):
			}
		}
	}
}
