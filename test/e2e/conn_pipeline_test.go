package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPipelinedLongPollFetchAndProduce is kafka-go's "writing and reading
// messages concurrently should preserve the order" on one raw connection:
// a Fetch with MinBytes=1 parks on an empty partition, and an acks=-1
// Produce follows it on the same connection. The produce must still be
// processed (answers are in order, so the parked fetch holds the produce's
// answer back, but not its processing); its data then completes the fetch
// long before max_wait_ms, and both answers arrive, fetch first.
func TestPipelinedLongPollFetchAndProduce(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("pipelined", 1, nil)
	c := dialRaw(t, tb.addr)

	const maxWait = 8 * time.Second // under rawIOTimeout, so a hang fails on read
	fetch := longPollFetch("pipelined", 0, maxWait)

	produce := produceRequest(7, -1, "pipelined", 0, recordsBatch(3, 10))

	start := time.Now()
	c.send(fetch, 1)
	c.send(produce, 2)

	fr := c.receive(fetch, 1).(*kmsg.FetchResponse)
	took := time.Since(start)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response shape: %+v", fr.Topics)
	}
	p := fr.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("parked fetch answered error %d with %d bytes after %v: the produce behind it did not reach it", p.ErrorCode, len(p.RecordBatches), took)
	}
	if took >= maxWait {
		t.Fatalf("parked fetch answered only at max_wait_ms (%v): the produce behind it was not processed meanwhile", took)
	}
	pr := c.receive(produce, 2).(*kmsg.ProduceResponse)
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce behind a parked fetch: error %d", code)
	}

	// A fetch that nothing satisfies is answered at max_wait_ms, not later,
	// and an ApiVersions pipelined behind it then answers too.
	const shortWait = 300 * time.Millisecond
	fetch.MaxWaitMillis = int32(shortWait / time.Millisecond)
	fetch.Topics[0].Partitions[0].FetchOffset = 3
	start = time.Now()
	c.send(fetch, 3)
	av := kmsg.NewPtrApiVersionsRequest()
	c.send(av, 4)
	fr = c.receive(fetch, 3).(*kmsg.FetchResponse)
	if took := time.Since(start); took < shortWait || took > shortWait+2*time.Second {
		t.Fatalf("empty long poll with max_wait_ms %v answered after %v", shortWait, took)
	}
	if n := len(fr.Topics[0].Partitions[0].RecordBatches); n != 0 {
		t.Fatalf("fetch at the log end returned %d bytes", n)
	}
	c.receive(av, 4)
	consumeCount(t, tb, "pipelined", 3)
}

// TestAnswerNotHeldBehindLongPoll: a produce's answer, written while a
// long-poll fetch pipelined behind it on the same connection still waits,
// goes out at once. The writer used to leave it in its buffer until the
// next answer (the fetch's, at max_wait_ms) was written too.
func TestAnswerNotHeldBehindLongPoll(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("held", 1, nil)
	c := dialRaw(t, tb.addr)

	const maxWait = 8 * time.Second            // under rawIOTimeout, so a hang fails on read
	fetch := longPollFetch("held", 3, maxWait) // past the produce's 3 records: nothing to answer
	produce := produceRequest(7, -1, "held", 0, recordsBatch(3, 10))

	start := time.Now()
	c.send(produce, 1)
	c.send(fetch, 2)
	pr := c.receive(produce, 1).(*kmsg.ProduceResponse)
	if took := time.Since(start); took >= maxWait {
		t.Fatalf("produce answered after %v, with the long poll behind it (max_wait_ms %v): held until the next answer", took, maxWait)
	}
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: error %d", code)
	}
}

// longPollFetch is a consumer's Fetch v11 of partition 0 of topic from
// offset that waits up to maxWait for one byte (MinBytes 1).
func longPollFetch(topic string, offset int64, maxWait time.Duration) *kmsg.FetchRequest {
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.ReplicaID = -1
	fetch.MaxWaitMillis = int32(maxWait / time.Millisecond)
	fetch.MinBytes = 1
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = offset
	fp.PartitionMaxBytes = 1 << 20
	fp.CurrentLeaderEpoch = -1
	fp.LogStartOffset = -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	return fetch
}
