package api

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/producer"
)

// markerBackend serves what handleWriteTxnMarkers asks of a Backend; the
// other methods are the embedded nil interface's (never called).
type markerBackend struct {
	Backend
	im      *metadata.Image
	cfg     *config.Broker
	results map[int32]error // partition -> the marker's outcome
	written []TxnMarkerParams
	groups  *listeningGroups
}

func (b *markerBackend) Image() *metadata.Image { return b.im }
func (b *markerBackend) Config() *config.Broker { return b.cfg }
func (b *markerBackend) Groups() GroupBackend   { return b.groups }
func (b *markerBackend) WriteTxnMarker(p TxnMarkerParams, done func(error)) {
	b.written = append(b.written, p)
	done(b.results[p.Partition])
}

type listeningGroups struct {
	GroupBackend
	completed []string
}

func (g *listeningGroups) TxnCompleted(partition int32, producerID int64, commit bool) {
	outcome := "abort"
	if commit {
		outcome = "commit"
	}
	g.completed = append(g.completed, fmt.Sprintf("%s %d/%d", outcome, producerID, partition))
}

func TestWriteTxnMarkers(t *testing.T) {
	cfg, err := config.NewBroker(map[string]string{
		"node.id": "1", "process.roles": "broker,controller",
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters": "1@127.0.0.1:1", "log.dirs": "/data", "cluster.id": "c",
	})
	if err != nil {
		t.Fatal(err)
	}
	im := coordinatorImage(t)
	im = mustApply(t, im, metadata.CreateTopic{Name: "data", ID: metadata.TopicID{9}, Partitions: []metadata.Partition{{Index: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}})
	groups := &listeningGroups{}
	b := &markerBackend{im: im, cfg: cfg, groups: groups, results: map[int32]error{
		1: producer.ErrCoordinatorFenced, 2: producer.ErrInvalidProducerEpoch,
	}}
	s := &Server{Backend: b}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 42, 3, true, 7
	for _, tp := range []struct {
		topic string
		parts []int32
	}{{"data", []int32{0}}, {OffsetsTopic, []int32{0, 1}}, {"missing", []int32{0}}} {
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = tp.topic, tp.parts
		m.Topics = append(m.Topics, mt)
	}
	req.Markers = append(req.Markers, m)
	var resp *kmsg.WriteTxnMarkersResponse
	s.Serve(&Request{Version: 1, Body: req}, func(r kmsg.Response) { resp = r.(*kmsg.WriteTxnMarkersResponse) })
	if resp == nil {
		t.Fatal("no answer")
	}
	codes := map[string]int16{}
	for _, rt := range resp.Markers[0].Topics {
		for _, rp := range rt.Partitions {
			codes[fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)] = rp.ErrorCode
		}
	}
	want := map[string]int16{
		"data/0": 0, OffsetsTopic + "/0": 0, OffsetsTopic + "/1": kerr.TransactionCoordinatorFenced.Code,
		"missing/0": kerr.UnknownTopicOrPartition.Code,
	}
	for k, w := range want {
		if codes[k] != w {
			t.Errorf("%s: code %d, want %d", k, codes[k], w)
		}
	}
	if len(b.written) != 3 || b.written[0] != (TxnMarkerParams{Topic: metadata.TopicID{9}, Partition: 0, ProducerID: 42, ProducerEpoch: 3, CoordinatorEpoch: 7, Commit: true, Timeout: markerTimeout}) {
		t.Fatalf("written %+v", b.written)
	}
	// Only the committed marker on __consumer_offsets reaches the group
	// coordinator.
	if len(groups.completed) != 1 || groups.completed[0] != "commit 42/0" {
		t.Fatalf("group coordinator told %v, want the commit on partition 0", groups.completed)
	}
}
