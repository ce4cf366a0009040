package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnGroupTransactSessionChain: three exactly-once stages of franz-go
// GroupTransactSessions run at once on a 3-broker cluster, in -> a -> b
// -> out, each stage its own group and transactional ids; the middle
// stage has two members. One of them is closed with a transaction open
// (output produced, not ended) while the chain runs, and a member with
// its transactional id replaces it (its InitProducerId aborts the open
// transaction; the records go to the surviving member or the
// replacement). The read_committed output holds each input once.
func TestTxnGroupTransactSessionChain(t *testing.T) {
	requirePartitionSide(t)
	c := startCluster(t, 3, eosClusterProps)
	ctx := testContext(t, 30*time.Second)
	adm := kadm.NewClient(c.client())
	topics := []string{"chain-in", "chain-a", "chain-b", "chain-out"}
	for _, tp := range topics {
		createReplicatedTopic(ctx, t, adm, tp, 3, 3, nil)
	}
	const n = 300
	recs := make([]*kgo.Record, n)
	for i := range recs {
		v := []byte(fmt.Sprintf("v%03d", i))
		recs[i] = &kgo.Record{Topic: topics[0], Key: v, Value: v}
	}
	if err := c.client().ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce input: %v", err)
	}

	// Each stage counts the input records of its committed transactions;
	// when all three have n, the members stop.
	var counted [3]atomic.Int64
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	note := func(stage int, k int) {
		counted[stage].Add(int64(k))
		if counted[0].Load() >= n && counted[1].Load() >= n && counted[2].Load() >= n {
			stop()
		}
	}
	session := func(stage int, txnID string) *kgo.GroupTransactSession {
		s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.addrs()...),
			kgo.TransactionalID(txnID), kgo.TransactionTimeout(10*time.Second),
			kgo.ConsumerGroup(fmt.Sprintf("chain-%d", stage)), kgo.ConsumeTopics(topics[stage]),
			kgo.SessionTimeout(clientGroupSession), kgo.HeartbeatInterval(clientGroupHeartbeat),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic(topics[stage+1]))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var wg sync.WaitGroup
	// member runs one consume-transform-produce loop of stage; with
	// killAfter > 0 it is closed, a transaction open, once it has
	// committed that many records, and closes killed.
	member := func(stage int, s *kgo.GroupTransactSession, killAfter int, killed chan<- struct{}) {
		defer wg.Done()
		defer s.Close()
		mine := 0
		for runCtx.Err() == nil {
			fs := s.PollRecords(runCtx, 20)
			if runCtx.Err() != nil {
				return
			}
			fs.EachError(func(tp string, p int32, err error) { t.Logf("stage %d fetch %s-%d: %v", stage, tp, p, err) })
			if err := s.Begin(); err != nil {
				t.Errorf("stage %d begin: %v", stage, err)
				return
			}
			k := 0
			fs.EachRecord(func(r *kgo.Record) {
				s.Produce(runCtx, &kgo.Record{Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
					if err != nil && runCtx.Err() == nil {
						t.Errorf("stage %d produce: %v", stage, err)
					}
				})
				k++
			})
			if killAfter > 0 && mine >= killAfter && k > 0 {
				// Output written, the transaction not ended: the member
				// goes without EndTxn.
				if err := s.Client().Flush(runCtx); err != nil {
					t.Errorf("stage %d flush before the kill: %v", stage, err)
				}
				close(killed)
				return
			}
			committed, err := s.End(runCtx, kgo.TryCommit)
			if err != nil {
				if runCtx.Err() == nil {
					t.Errorf("stage %d end: %v", stage, err)
				}
				return
			}
			if committed {
				mine += k
				note(stage, k)
			}
		}
	}
	killed := make(chan struct{})
	wg.Add(5)
	go member(0, session(0, "chain-0"), 0, nil)
	go member(1, session(1, "chain-1a"), 40, killed)
	go member(1, session(1, "chain-1b"), 0, nil)
	go member(2, session(2, "chain-2"), 0, nil)
	select {
	case <-killed:
	case <-ctx.Done():
		t.Fatalf("the middle stage's member never reached the kill (counted %d %d %d)",
			counted[0].Load(), counted[1].Load(), counted[2].Load())
	}
	go member(1, session(1, "chain-1a"), 0, nil)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("chain did not finish: counted %d %d %d of %d", counted[0].Load(), counted[1].Load(), counted[2].Load(), n)
	}
	for stage := range counted {
		if got := counted[stage].Load(); got != n {
			t.Errorf("stage %d committed %d input records, want %d", stage, got, n)
		}
	}

	counts := readCommittedOutput(ctx, t, c, topics[3])
	for i := range n {
		if v := fmt.Sprintf("v%03d", i); counts[v] != 1 {
			t.Errorf("output holds %s %d times, want once", v, counts[v])
		}
	}
	if len(counts) != n+1 { // the values and the end sentinel
		t.Errorf("output holds %d distinct values, want %d", len(counts)-1, n)
	}
}
