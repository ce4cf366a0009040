package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceNumbered writes n records with values "0".."n-1" round-robin over
// the topic's partitions and waits for all of them (acks=all).
func produceNumbered(ctx context.Context, t testing.TB, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// TestGroupSingleBrokerCommitAndResume: on one broker (the Kafka default
// offsets.topic.replication.factor of 3 cannot be met and is capped at the
// node count), a franz-go group member consumes, commits, and a new member
// of the same group resumes after the committed offsets; kadm sees the
// group and its offsets.
func TestGroupSingleBrokerCommitAndResume(t *testing.T) {
	tb := startBroker(t, withProp("group.initial.rebalance.delay.ms", "0"))
	ctx := testContext(t, 45*time.Second)
	const topic, groupID = "orders", "billing"
	tb.createTopic(topic, 3, nil)
	produceNumbered(ctx, t, tb.client(), topic, 0, 30)

	first := tb.client(kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := pollValues(ctx, t, first, 30)
	if len(seen) != 30 {
		t.Fatalf("first member saw %d distinct records, want 30", len(seen))
	}
	if err := first.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	first.Close()

	adm := kadm.NewClient(tb.client())
	offsets, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	var committed int64
	offsets.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Errorf("offset %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		committed += o.At
	})
	if committed != 30 {
		t.Fatalf("committed offsets sum to %d, want 30", committed)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("list groups: %v", err)
	}
	if _, ok := listed[groupID]; !ok {
		t.Fatalf("ListGroups does not show %q: %v", groupID, listed.Groups())
	}

	produceNumbered(ctx, t, tb.client(), topic, 30, 10)
	second := tb.client(kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	resumed := pollValues(ctx, t, second, 10)
	for v := range resumed {
		if n, _ := strconv.Atoi(v); n < 30 {
			t.Fatalf("resumed member got %q, committed before", v)
		}
	}
}

// pollValues polls until want distinct values arrived and returns them
// with their delivery counts.
func pollValues(ctx context.Context, t testing.TB, cl *kgo.Client, want int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for len(seen) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("polled %d of %d records: %v", len(seen), want, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Logf("fetch error %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	return seen
}

var _ = fmt.Sprintf
