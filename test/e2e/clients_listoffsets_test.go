package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsets checks ListOffsets through kadm (earliest, latest, by
// timestamp) and with a raw kmsg request (max timestamp, -3, and the -1
// answer for a timestamp past the last record, which kadm rewrites).
//
// Partition 0 holds 20 records 1 s apart, four to a batch, so a lookup must
// find a record inside a batch. Partition 1 holds 10 records one to a batch
// with one timestamp far in the future at offset 7: by Kafka's rule (the
// first offset whose timestamp is at or after the target) a lookup between
// the timestamps of offsets 6 and 8 answers 7. Small segments and a dense
// index make lookups cross segment and index boundaries.
func TestListOffsets(t *testing.T) {
	tb := startBroker(t)
	const topic = "list-offsets"
	segmentBytes, indexInterval := "1024", "64"
	tb.createTopic(topic, 2, map[string]*string{
		"segment.bytes":        &segmentBytes,
		"index.interval.bytes": &indexInterval,
	})
	ctx := testContext(t, 30*time.Second)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	ts := func(ms int64) time.Time { return time.UnixMilli(ms) }
	// 100 pseudo-random bytes per value: franz-go compresses batches
	// (snappy by default), so only incompressible values make a few
	// batches fill a 1 KiB segment. A lookup inside a compressed batch
	// also makes the broker look inside it.
	recordValue := func(i int) []byte {
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		v := make([]byte, 100)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		return v
	}

	cl := tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	for b := range 5 {
		var batch []*kgo.Record
		for i := b * 4; i < b*4+4; i++ {
			batch = append(batch, &kgo.Record{Partition: 0, Timestamp: ts(base + int64(i)*1000), Value: recordValue(i)})
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatalf("produce partition 0 batch %d: %v", b, err)
		}
	}
	const spike = 1_000_000 // ms after base: partition 1's max timestamp, at offset 7
	for i := range int64(10) {
		stamp := base + i*1000
		if i == 7 {
			stamp = base + spike
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Timestamp: ts(stamp), Value: recordValue(int(i))}).FirstErr(); err != nil {
			t.Fatalf("produce partition 1 record %d: %v", i, err)
		}
	}

	// The lookups below are only as good as the layout they search.
	for p := range 2 {
		dir := filepath.Join(tb.props["log.dirs"], fmt.Sprintf("%s-%d", topic, p))
		segments, err := filepath.Glob(filepath.Join(dir, "*.log"))
		if err != nil || len(segments) < 2 {
			t.Fatalf("partition %d has %d segments in %s (err %v), want several", p, len(segments), dir, err)
		}
	}

	adm := kadm.NewClient(cl)
	t.Run("earliest and latest", func(t *testing.T) {
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatalf("list start offsets: %v", err)
		}
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatalf("list end offsets: %v", err)
		}
		for p, want := range map[int32][2]int64{0: {0, 20}, 1: {0, 10}} {
			requireListedOffset(t, "earliest", starts, topic, p, want[0])
			requireListedOffset(t, "latest", ends, topic, p, want[1])
		}
	})

	t.Run("by timestamp", func(t *testing.T) {
		cases := []struct {
			name          string
			partition     int32
			millis        int64
			wantOffset    int64
			wantTimestamp int64
		}{
			{"before everything", 0, base - 100_000, 0, base},
			{"first record exactly", 0, base, 0, base},
			{"inside a batch, exact", 0, base + 5000, 5, base + 5000},
			{"inside a batch, between", 0, base + 4500, 5, base + 5000},
			{"last record", 0, base + 19_000, 19, base + 19_000},
			{"first batch boundary", 0, base + 3500, 4, base + 4000},
			{"earlier offset with a later timestamp wins", 1, base + 7500, 7, base + spike},
			{"before the spike", 1, base + 6000, 6, base + 6000},
			{"the spike itself", 1, base + spike, 7, base + spike},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				listed, err := adm.ListOffsetsAfterMilli(ctx, tc.millis, topic)
				if err != nil {
					t.Fatalf("list offsets after %d: %v", tc.millis, err)
				}
				o := requireListedOffset(t, "after milli", listed, topic, tc.partition, tc.wantOffset)
				if o.Timestamp != tc.wantTimestamp {
					t.Errorf("timestamp %d, want %d", o.Timestamp, tc.wantTimestamp)
				}
			})
		}
		// kadm documents that a time after every record lists the end
		// offset; it asks again for -1 when the broker says "none".
		listed, err := adm.ListOffsetsAfterMilli(ctx, base+20_000, topic)
		if err != nil {
			t.Fatalf("list offsets after the last record: %v", err)
		}
		requireListedOffset(t, "after the last record (kadm)", listed, topic, 0, 20)
	})

	t.Run("raw kmsg", func(t *testing.T) {
		cases := []struct {
			name          string
			partition     int32
			timestamp     int64
			wantOffset    int64
			wantTimestamp int64
		}{
			{"max timestamp, monotonic partition", 0, -3, 19, base + 19_000},
			{"max timestamp, spike in the middle", 1, -3, 7, base + spike},
			{"after the last record: none", 0, base + 20_000, -1, -1},
			{"earliest", 1, -2, 0, -1},
			{"latest", 1, -1, 10, -1},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				p := listOffsetRaw(ctx, t, cl, topic, tc.partition, tc.timestamp)
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					t.Fatalf("partition %d: %v", tc.partition, err)
				}
				if p.Offset != tc.wantOffset || p.Timestamp != tc.wantTimestamp {
					t.Errorf("offset %d timestamp %d, want offset %d timestamp %d",
						p.Offset, p.Timestamp, tc.wantOffset, tc.wantTimestamp)
				}
			})
		}
	})
}

// requireListedOffset checks one partition's listed offset and returns it.
func requireListedOffset(t *testing.T, what string, listed kadm.ListedOffsets, topic string, partition int32, want int64) kadm.ListedOffset {
	t.Helper()
	o, ok := listed.Lookup(topic, partition)
	if !ok {
		t.Fatalf("%s: partition %d missing from the answer", what, partition)
	}
	if o.Err != nil {
		t.Fatalf("%s: partition %d: %v", what, partition, o.Err)
	}
	if o.Offset != want {
		t.Errorf("%s: partition %d offset %d, want %d", what, partition, o.Offset, want)
	}
	return o
}

// listOffsetRaw sends one ListOffsets request (the newest version both
// sides support; -3 needs v7) and returns the partition's answer.
func listOffsetRaw(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, partition int32, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.CurrentLeaderEpoch = -1
	rp.Timestamp = timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("list offsets request: %v", err)
	}
	if resp.Version < 7 && timestamp == -3 {
		t.Fatalf("ListOffsets answered at v%d; -3 needs v7", resp.Version)
	}
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			if st.Topic == topic && sp.Partition == partition {
				return sp
			}
		}
	}
	t.Fatalf("partition %d missing from the ListOffsets answer", partition)
	return kmsg.ListOffsetsResponseTopicPartition{}
}
