package api

// WriteTxnMarkers: versions 0-2 (v1 is flexible; Kafka 3.x and 4.0 send
// it; v2, KIP-1228, carries the transaction version). The transaction coordinator asks each partition's leader to write a
// COMMIT or ABORT marker for a producer (Backend.WriteTxnMarker, through
// the replica core); each partition is answered once its marker is below
// the high watermark, as Kafka appends markers with acks=all. Only brokers
// may send it: CLUSTER_ACTION on the cluster, else every partition gets
// CLUSTER_AUTHORIZATION_FAILED. A marker from an older producer epoch is
// answered INVALID_PRODUCER_EPOCH, one from an older coordinator epoch
// TRANSACTION_COORDINATOR_FENCED. v2's transaction version is passed on
// but not enforced (producer.Table.CheckMarker says why).
//
// A marker committed on a partition of __consumer_offsets also ends the
// producer's transactional offset commits there: the group coordinator
// is told (TxnCompletionListener) after the marker is committed, as
// Kafka's handler calls its group coordinator's onTransactionCompleted.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 27, MinVersion: 0, MaxVersion: 2, Handle: handleWriteTxnMarkers})
}

// markerTimeout bounds the wait for a marker's replication: Kafka's
// request.timeout.ms default, which its coordinator's marker appends use.
const markerTimeout = 30 * time.Second

// TxnCompletionListener is implemented by a GroupBackend that holds
// transactional offset commits (TxnOffsetCommit): TxnCompleted is called
// once a marker for producerID is committed on partition of
// __consumer_offsets, commit telling the outcome. It must not block.
type TxnCompletionListener interface {
	TxnCompleted(partition int32, producerID int64, commit bool)
}

func handleWriteTxnMarkers(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	allowed := s.allowedCluster(r, authz.OpClusterAction)
	im := s.Backend.Image()
	answer := newCountdown(func() { respond(resp) })
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	for mi := range req.Markers {
		m := &req.Markers[mi]
		sm := &resp.Markers[mi]
		*sm = kmsg.NewWriteTxnMarkersResponseMarker()
		sm.ProducerID = m.ProducerID
		sm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
		for ti := range m.Topics {
			rt := &m.Topics[ti]
			st := &sm.Topics[ti]
			*st = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			st.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(rt.Partitions))
			t, terr := lookupTopic(im, false, rt.Topic, [16]byte{})
			for pi, p := range rt.Partitions {
				sp := &st.Partitions[pi]
				*sp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = p
				switch {
				case !allowed:
					sp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					continue
				case terr != nil:
					sp.ErrorCode = ErrorCode(terr)
					continue
				}
				answer.add()
				s.Backend.WriteTxnMarker(TxnMarkerParams{
					Topic: t.ID, Partition: p,
					ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
					CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Committed,
					Timeout: markerTimeout, TransactionVersion: m.TransactionVersion,
				}, func(err error) {
					sp.ErrorCode = ErrorCode(err)
					if l, ok := s.Backend.Groups().(TxnCompletionListener); ok && err == nil && rt.Topic == OffsetsTopic {
						l.TxnCompleted(p, m.ProducerID, m.Committed)
					}
					answer.finish()
				})
			}
		}
	}
	answer.finish()
}
