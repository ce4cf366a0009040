package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// randomFetchResponse builds a Fetch answer of version v with every field
// the broker may set, each present or absent at random.
func randomFetchResponse(r *rand.Rand, v int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(v)
	resp.ThrottleMillis = r.Int32N(100)
	resp.ErrorCode = int16(r.IntN(3))
	resp.SessionID = r.Int32()
	for range r.IntN(4) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(bytes.Repeat([]byte("t"), 1+r.IntN(20)))
		for k := range t.TopicID {
			t.TopicID[k] = byte(r.IntN(256))
		}
		for range r.IntN(4) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = r.Int32N(1000)
			p.ErrorCode = int16(r.IntN(3))
			p.HighWatermark = r.Int64N(1 << 40)
			p.LastStableOffset = r.Int64N(1 << 40)
			p.LogStartOffset = r.Int64N(1 << 40)
			switch r.IntN(3) {
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case 2:
				for range 1 + r.IntN(3) {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = r.Int64(), r.Int64()
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
			}
			p.PreferredReadReplica = r.Int32N(5) - 1
			switch r.IntN(4) {
			case 1:
				p.RecordBatches = []byte{}
			case 2:
				p.RecordBatches = randomBytes(r, 1+r.IntN(300))
			case 3:
				p.RecordBatches = randomBytes(r, 20000+r.IntN(200000)) // multi-byte length prefixes
			}
			if r.IntN(3) == 0 {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = r.Int32N(9), r.Int64N(1<<30)
			}
			if r.IntN(3) == 0 {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = r.Int32N(9), r.Int32N(9)
			}
			if r.IntN(4) == 0 {
				p.SnapshotID.EndOffset, p.SnapshotID.Epoch = r.Int64N(1<<30), r.Int32N(9)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if r.IntN(3) == 0 {
		for range 1 + r.IntN(3) {
			b := kmsg.NewFetchResponseBroker()
			b.NodeID, b.Host, b.Port = r.Int32N(9), "host-"+string(rune('a'+r.IntN(26))), r.Int32N(65536)
			if r.IntN(2) == 0 {
				rack := "rack-1"
				b.Rack = &rack
			}
			resp.Brokers = append(resp.Brokers, b)
		}
	}
	return resp
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

// TestAppendFetchVectored checks that the pieces joined are byte for
// byte the generic encoding, for every Fetch version the broker answers
// (4-16) and random answers, and that the records are referred to, not
// copied.
func TestAppendFetchVectored(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var v VectoredFetch
	var head []byte
	for version := int16(4); version <= 16; version++ {
		for i := range 60 {
			resp := randomFetchResponse(r, version)
			hdr := RequestHeader{Key: 1, Version: version, CorrelationID: r.Int32()}
			want := AppendResponse(nil, hdr, resp)
			if !AppendFetchVectored(&v, head, hdr, resp) {
				t.Fatalf("v%d #%d: refused an answer without unknown tags", version, i)
			}
			head = v.Head
			got := bytes.Join(v.Pieces, nil)
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d #%d: vectored encoding differs from AppendResponse (%d vs %d bytes)", version, i, len(got), len(want))
			}
			if v.Size != len(want) {
				t.Fatalf("v%d #%d: Size %d, frame is %d bytes", version, i, v.Size, len(want))
			}
			records := 0
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					if len(p.RecordBatches) == 0 {
						continue
					}
					records++
					found := false
					for _, piece := range v.Pieces {
						if len(piece) > 0 && &piece[0] == &p.RecordBatches[0] && len(piece) == len(p.RecordBatches) {
							found = true
						}
					}
					if !found {
						t.Fatalf("v%d #%d: partition %d's records were copied, not referred to", version, i, p.Partition)
					}
				}
			}
			if len(v.Head) != v.Size-totalRecords(resp) {
				t.Fatalf("v%d #%d: head holds %d bytes, want %d", version, i, len(v.Head), v.Size-totalRecords(resp))
			}
		}
	}
}

func totalRecords(resp *kmsg.FetchResponse) int {
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n += len(p.RecordBatches)
		}
	}
	return n
}

// TestAppendFetchVectoredRefusesUnknownTags: unknown tags go through the
// generic encoder.
func TestAppendFetchVectoredRefusesUnknownTags(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(16)
	tp := kmsg.NewFetchResponseTopic()
	p := kmsg.NewFetchResponseTopicPartition()
	p.UnknownTags.Set(9, []byte{1})
	tp.Partitions = append(tp.Partitions, p)
	resp.Topics = append(resp.Topics, tp)
	var v VectoredFetch
	if AppendFetchVectored(&v, nil, RequestHeader{Key: 1, Version: 16}, resp) {
		t.Fatal("encoded an answer with unknown tags")
	}
}
