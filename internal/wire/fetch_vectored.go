package wire

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MinVectoredRecords is the record bytes from which a Fetch answer is
// written as pieces (AppendFetchVectored) rather than encoded whole: below
// it the copy costs less than the extra pieces of the vectored write.
const MinVectoredRecords = 64 << 10

// VectoredFetch is a size-prefixed Fetch response frame in pieces: the
// encoded fields in Head, and each partition's record batches referred to,
// not copied (the partition's length prefix ends the head piece before
// them). Pieces are the frame in order; Size is its length, size prefix
// included.
type VectoredFetch struct {
	Head   []byte
	Pieces [][]byte
	Size   int
	cuts   []cut
}

// cut places records after head[:at].
type cut struct {
	at   int
	recs []byte
}

// AppendFetchVectored encodes resp for the request header h, as
// AppendResponse(head, h, resp) would, into v: the bytes are identical to
// that encoding once the pieces are joined (TestAppendFetchVectored). The
// record batches of the answer (the log's read buffers) are not copied,
// so a connection writes them with one vectored write (writev) straight
// from the buffers the reads filled: a large fetch answer used to be
// copied once more into the response buffer, 4% of a broker's CPU at RF=3
// (docs/performance.md). ok is false, and v unchanged, when resp carries
// unknown tagged fields (which only the generic encoder writes); encode it
// with AppendResponse then. v's slices are reused across calls.
func AppendFetchVectored(v *VectoredFetch, head []byte, h RequestHeader, resp *kmsg.FetchResponse) (ok bool) {
	if hasUnknownTags(resp) {
		return false
	}
	version := resp.Version
	flex := version >= 12
	dst := append(head[:0], 0, 0, 0, 0) // size, filled below
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.CorrelationID))
	if flex {
		dst = append(dst, 0) // response header tags
	}
	cuts := v.cuts[:0]
	recordBytes := 0
	if version >= 1 {
		dst = kbin.AppendInt32(dst, resp.ThrottleMillis)
	}
	if version >= 7 {
		dst = kbin.AppendInt16(dst, resp.ErrorCode)
		dst = kbin.AppendInt32(dst, resp.SessionID)
	}
	dst = appendArrayLen(dst, len(resp.Topics), flex)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if version <= 12 {
			dst = appendString(dst, t.Topic, flex)
		}
		if version >= 13 {
			dst = kbin.AppendUuid(dst, t.TopicID)
		}
		dst = appendArrayLen(dst, len(t.Partitions), flex)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			if version >= 4 {
				dst = kbin.AppendInt64(dst, p.LastStableOffset)
			}
			if version >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if version >= 4 {
				a := p.AbortedTransactions
				if flex {
					dst = kbin.AppendCompactNullableArrayLen(dst, len(a), a == nil)
				} else {
					dst = kbin.AppendNullableArrayLen(dst, len(a), a == nil)
				}
				for k := range a {
					dst = kbin.AppendInt64(dst, a[k].ProducerID)
					dst = kbin.AppendInt64(dst, a[k].FirstOffset)
					if flex {
						dst = append(dst, 0) // no tags
					}
				}
			}
			if version >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			recs := p.RecordBatches
			switch {
			case recs == nil && flex:
				dst = append(dst, 0)
			case recs == nil:
				dst = kbin.AppendInt32(dst, -1)
			case flex:
				dst = kbin.AppendUvarint(dst, 1+uint32(len(recs)))
			default:
				dst = kbin.AppendInt32(dst, int32(len(recs)))
			}
			if len(recs) > 0 {
				cuts = append(cuts, cut{at: len(dst), recs: recs})
				recordBytes += len(recs)
			}
			if flex {
				dst = appendPartitionTags(dst, p)
			}
		}
		if flex {
			dst = append(dst, 0) // topic tags
		}
	}
	if flex {
		if len(resp.Brokers) == 0 {
			dst = append(dst, 0)
		} else {
			dst = append(dst, 1, 0) // one tag, tag 0
			dst = appendSized(dst, func(dst []byte) []byte {
				dst = kbin.AppendCompactArrayLen(dst, len(resp.Brokers))
				for i := range resp.Brokers {
					b := &resp.Brokers[i]
					dst = kbin.AppendInt32(dst, b.NodeID)
					dst = kbin.AppendCompactString(dst, b.Host)
					dst = kbin.AppendInt32(dst, b.Port)
					dst = kbin.AppendCompactNullableString(dst, b.Rack)
					dst = append(dst, 0)
				}
				return dst
			})
		}
	}
	size := len(dst) + recordBytes
	binary.BigEndian.PutUint32(dst, uint32(size-4))
	pieces := v.Pieces[:0]
	from := 0
	for _, c := range cuts {
		pieces = append(pieces, dst[from:c.at], c.recs)
		from = c.at
	}
	if from < len(dst) {
		pieces = append(pieces, dst[from:])
	}
	clear(cuts) // drop the references to the read buffers
	*v = VectoredFetch{Head: dst, Pieces: pieces, Size: size, cuts: cuts[:0]}
	return true
}

// appendPartitionTags appends a Fetch partition's tagged fields (v12+):
// DivergingEpoch (0), CurrentLeader (1), SnapshotID (2), each only when
// it is not its default, as the generated encoder does.
func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	diverging := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	leader := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	snapshot := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	n := 0
	for _, set := range []bool{diverging, leader, snapshot} {
		if set {
			n++
		}
	}
	dst = kbin.AppendUvarint(dst, uint32(n))
	if diverging {
		dst = append(dst, 0, 13) // tag, size: int32 + int64 + no tags
		dst = kbin.AppendInt32(dst, p.DivergingEpoch.Epoch)
		dst = kbin.AppendInt64(dst, p.DivergingEpoch.EndOffset)
		dst = append(dst, 0)
	}
	if leader {
		dst = append(dst, 1, 9)
		dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderID)
		dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderEpoch)
		dst = append(dst, 0)
	}
	if snapshot {
		dst = append(dst, 2, 13)
		dst = kbin.AppendInt64(dst, p.SnapshotID.EndOffset)
		dst = kbin.AppendInt32(dst, p.SnapshotID.Epoch)
		dst = append(dst, 0)
	}
	return dst
}

// appendSized appends what body appends, preceded by its length as a
// uvarint (a tagged field's size).
func appendSized(dst []byte, body func([]byte) []byte) []byte {
	start := len(dst)
	dst = body(dst)
	n := len(dst) - start
	var lenBuf [5]byte
	l := len(kbin.AppendUvarint(lenBuf[:0], uint32(n)))
	dst = append(dst, lenBuf[:l]...) // room for the prefix
	copy(dst[start+l:], dst[start:start+n])
	kbin.AppendUvarint(dst[start:start], uint32(n))
	return dst
}

func appendArrayLen(dst []byte, n int, flex bool) []byte {
	if flex {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func appendString(dst []byte, s string, flex bool) []byte {
	if flex {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}

// hasUnknownTags reports whether any part of resp carries tagged fields
// this encoder does not know (the broker never sets any).
func hasUnknownTags(resp *kmsg.FetchResponse) bool {
	if resp.UnknownTags.Len() > 0 {
		return true
	}
	for i := range resp.Brokers {
		if resp.Brokers[i].UnknownTags.Len() > 0 {
			return true
		}
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return true
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.UnknownTags.Len() > 0 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.UnknownTags.Len() > 0 || p.SnapshotID.UnknownTags.Len() > 0 {
				return true
			}
			for k := range p.AbortedTransactions {
				if p.AbortedTransactions[k].UnknownTags.Len() > 0 {
					return true
				}
			}
		}
	}
	return false
}
