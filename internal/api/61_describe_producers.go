package api

// DescribeProducers: version 0 (KIP-664). The leader of each partition
// lists the idempotent producers it holds state for: id, epoch, last
// sequence, last timestamp, the epoch of the transaction coordinator whose
// marker it last applied, and the first offset of its open transaction on
// the partition (-1 for none). A partition led elsewhere answers NOT_LEADER_OR_FOLLOWER (clients
// send each partition to its leader).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/producer"
)

func init() {
	register(Spec{Key: 61, MinVersion: 0, MaxVersion: 0, Handle: handleDescribeProducers})
}

// ProducerState is one active producer of a partition.
type ProducerState struct {
	ProducerID    int64
	Epoch         int16
	LastSequence  int32 // -1 before any data batch of this epoch
	LastTimestamp int64
	// CoordinatorEpoch is the epoch of the coordinator whose marker was
	// applied last, -1 before any.
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of the producer's open
	// transaction here, -1 for none.
	CurrentTxnStartOffset int64
}

// ProducerStates describes a producer table's entries.
func ProducerStates(entries []producer.Entry) []ProducerState {
	out := make([]ProducerState, len(entries))
	for i, e := range entries {
		out[i] = ProducerState{ProducerID: e.ProducerID, Epoch: e.Epoch, LastSequence: -1, LastTimestamp: e.LastTimestamp,
			CoordinatorEpoch: e.CoordinatorEpoch, CurrentTxnStartOffset: e.CurrentTxnFirstOffset}
		if n := len(e.Batches); n > 0 {
			out[i].LastSequence = e.Batches[n-1].LastSeq
		}
	}
	return out
}

func handleDescribeProducers(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	im := s.Backend.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.lookupAuthorized(r, authz.OpRead, im, false, rt.Topic, [16]byte{})
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			var (
				producers []ProducerState
				err       = terr
			)
			if err == nil {
				producers, err = s.Backend.DescribeProducers(metadata.TopicID(t.ID), p)
			}
			if err != nil {
				sp.ErrorCode, sp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, ps := range producers {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = ps.ProducerID, int32(ps.Epoch)
				ap.LastSequence, ap.LastTimestamp = ps.LastSequence, ps.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = ps.CoordinatorEpoch, ps.CurrentTxnStartOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}
