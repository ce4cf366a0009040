package replica

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replication"
)

// answerFor answers every partition of req with code, but leaves out
// the partitions skip names.
func answerFor(req *kmsg.AlterPartitionRequest, code int16, skip ...int32) *kmsg.AlterPartitionResponse {
	resp := kmsg.NewPtrAlterPartitionResponse()
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.TopidID = rt.TopicID
		for _, rp := range rt.Partitions {
			if slices.Contains(skip, rp.Partition) {
				continue
			}
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// TestISRBatcherOneRequestInFlight: the changes queued go in one request,
// grouped by topic; while it is in flight nothing else goes, and what
// was queued meanwhile goes next; each change gets its own outcome, and
// a change the answer leaves out, or a failed request, stays unknown
// (resent rather than taken as accepted).
func TestISRBatcherOneRequestInFlight(t *testing.T) {
	var b ISRBatcher[string]
	t1, t2 := metadata.TopicID{1}, metadata.TopicID{2}
	ch := func(pe int32) replication.ISRChange {
		return replication.ISRChange{NewISR: []int32{3, 1}, LeaderEpoch: 4, PartitionEpoch: pe}
	}
	if b.Next(3, 77) != nil {
		t.Fatal("a request with nothing queued")
	}
	b.Add("a", t1, 0, ch(1))
	b.Add("b", t2, 5, ch(2))
	b.Add("c", t1, 1, ch(3))
	b.Add("a", t1, 0, ch(9)) // replaces a's queued change
	req := b.Next(3, 77)
	if req == nil || req.BrokerID != 3 || req.BrokerEpoch != 77 || len(req.Topics) != 2 {
		t.Fatalf("request %+v", req)
	}
	if ps := req.Topics[0].Partitions; req.Topics[0].TopicID != t1 || len(ps) != 2 || ps[0].PartitionEpoch != 9 || ps[1].Partition != 1 {
		t.Fatalf("first topic %+v", req.Topics[0])
	}
	b.Add("d", t2, 6, ch(4))
	if b.Next(3, 77) != nil {
		t.Fatal("a second request while one is in flight")
	}
	outs := b.Answered(answerFor(req, 0, 1), nil)
	if len(outs) != 3 || outs[0].Key != "a" || outs[0].Err != nil || outs[0].Change.PartitionEpoch != 9 {
		t.Fatalf("outcomes %+v", outs)
	}
	if outs[1].Key != "b" || outs[1].Err != nil {
		t.Errorf("b: %+v, want accepted", outs[1])
	}
	if outs[2].Key != "c" || outs[2].Err == nil || !replication.ISRChangeOutcomeUnknown(outs[2].Err) {
		t.Errorf("c, left out of the answer: %+v, want an unknown outcome", outs[2])
	}

	req = b.Next(3, 78)
	if req == nil || len(req.Topics) != 1 || req.Topics[0].Partitions[0].Partition != 6 {
		t.Fatalf("the change queued meanwhile: %+v", req)
	}
	outs = b.Answered(answerFor(req, kerr.IneligibleReplica.Code), nil)
	if len(outs) != 1 || !errors.Is(outs[0].Err, kerr.IneligibleReplica) {
		t.Fatalf("refused: %+v", outs)
	}

	b.Add("a", t1, 0, ch(10))
	req = b.Next(3, 78)
	resp := answerFor(req, 0)
	resp.ErrorCode = kerr.NotController.Code
	if outs = b.Answered(resp, nil); len(outs) != 1 || !errors.Is(outs[0].Err, kerr.NotController) {
		t.Fatalf("top-level error: %+v", outs)
	}
	b.Add("a", t1, 0, ch(11))
	b.Next(3, 78)
	if outs = b.Answered(nil, errors.New("connection reset")); len(outs) != 1 || !replication.ISRChangeOutcomeUnknown(outs[0].Err) {
		t.Fatalf("failed request: %+v", outs)
	}
	if b.Answered(nil, nil) != nil {
		t.Fatal("an answer with nothing in flight")
	}
}

// TestISRBatcherBoundsARequest: more than MaxISRBatch queued go in
// several requests.
func TestISRBatcherBoundsARequest(t *testing.T) {
	var b ISRBatcher[int]
	for i := range MaxISRBatch + 5 {
		b.Add(i, metadata.TopicID{1}, int32(i), replication.ISRChange{NewISR: []int32{1}})
	}
	req := b.Next(1, 1)
	if n := len(req.Topics[0].Partitions); n != MaxISRBatch || b.Pending() != 5 {
		t.Fatalf("first request carries %d, %d left; want %d and 5", n, b.Pending(), MaxISRBatch)
	}
	b.Answered(answerFor(req, 0), nil)
	if req = b.Next(1, 1); len(req.Topics[0].Partitions) != 5 || b.Pending() != 0 {
		t.Fatalf("second request %+v", req)
	}
}
