package controller

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

var defaults = Defaults{NumPartitions: 3, ReplicationFactor: 2}

// rejectKey is a ConfigValidator that refuses one key.
func rejectKey(bad string) ConfigValidator {
	return func(c map[string]string) error {
		if _, ok := c[bad]; ok {
			return errors.New(bad + " is not allowed")
		}
		return nil
	}
}

func TestCreateTopic(t *testing.T) {
	base := withTopic(t, cluster(t, ids(1, 2, 3, 4)), "existing.topic", topicID(1), part(1, ids(1), ids(1), nil))
	base = fence(t, base, 4)

	tests := []struct {
		name     string
		req      CreateTopicRequest
		id       *metadata.TopicID // nil: a fresh id
		want     *kerr.Error
		check    func(t *testing.T, tp *metadata.Topic)
		validate ConfigValidator
	}{
		{
			name: "defaults",
			req:  CreateTopicRequest{Name: "orders", NumPartitions: -1, ReplicationFactor: -1, Configs: map[string]string{"retention.ms": "1"}},
			check: func(t *testing.T, tp *metadata.Topic) {
				if len(tp.Partitions) != 3 || tp.Configs["retention.ms"] != "1" {
					t.Fatalf("topic = %+v", tp)
				}
				for _, p := range tp.Partitions {
					if len(p.Replicas) != 2 || !slices.Equal(p.ISR, p.Replicas) || p.Leader != p.Replicas[0] || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
						t.Fatalf("partition = %+v", p)
					}
					if slices.Contains(p.Replicas, 4) {
						t.Fatalf("fenced broker 4 placed: %+v", p)
					}
				}
			},
		},
		{
			name: "explicit counts",
			req:  CreateTopicRequest{Name: "wide", NumPartitions: 9, ReplicationFactor: 3},
			check: func(t *testing.T, tp *metadata.Topic) {
				if len(tp.Partitions) != 9 || len(tp.Partitions[8].Replicas) != 3 {
					t.Fatalf("topic = %+v", tp)
				}
			},
		},
		{
			name: "manual assignment with a fenced replica keeps it out of the isr",
			req:  CreateTopicRequest{Name: "manual", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {4, 2}, 1: {3, 1}}},
			check: func(t *testing.T, tp *metadata.Topic) {
				want := []metadata.Partition{
					{Index: 0, Replicas: ids(4, 2), ISR: ids(2), Leader: 2},
					{Index: 1, Replicas: ids(3, 1), ISR: ids(3, 1), Leader: 3},
				}
				if !reflect.DeepEqual(tp.Partitions, want) {
					t.Fatalf("partitions = %+v", tp.Partitions)
				}
			},
		},
		{name: "invalid name", req: CreateTopicRequest{Name: "bad name", NumPartitions: 1, ReplicationFactor: 1}, want: kerr.InvalidTopicException},
		{name: "exists", req: CreateTopicRequest{Name: "existing.topic", NumPartitions: 1, ReplicationFactor: 1}, want: kerr.TopicAlreadyExists},
		{name: "collides by dot and underscore", req: CreateTopicRequest{Name: "existing_topic", NumPartitions: 1, ReplicationFactor: 1}, want: kerr.InvalidTopicException},
		{name: "zero partitions", req: CreateTopicRequest{Name: "t", NumPartitions: 0, ReplicationFactor: 1}, want: kerr.InvalidPartitions},
		{name: "negative partitions", req: CreateTopicRequest{Name: "t", NumPartitions: -2, ReplicationFactor: 1}, want: kerr.InvalidPartitions},
		{name: "zero rf", req: CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: 0}, want: kerr.InvalidReplicationFactor},
		{name: "rf above active brokers", req: CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: 4}, want: kerr.InvalidReplicationFactor},
		{name: "assignment with counts", req: CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}}}, want: kerr.InvalidRequest},
		{name: "assignment gap", req: CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}, 2: {2}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment uneven rf", req: CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}, 1: {2, 3}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment duplicate broker", req: CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 1}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment unknown broker", req: CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {9}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment empty list", req: CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {}}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment only fenced", req: CreateTopicRequest{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {4}}}, want: kerr.InvalidReplicaAssignment},
		{name: "config rejected by validator", req: CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"bogus": "1"}}, validate: rejectKey("bogus"), want: kerr.InvalidConfig},
		{name: "config value too long", req: CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"k": strings.Repeat("v", metadata.MaxConfigValueLen+1)}}, want: kerr.InvalidConfig},
		{name: "zero id", id: &metadata.TopicID{}, req: CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: 1}, want: kerr.UnknownServerError},
		{name: "id in use", id: ptr(topicID(1)), req: CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: 1}, want: kerr.UnknownServerError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := topicID(42)
			if tc.id != nil {
				id = *tc.id
			}
			recs, err := CreateTopic(base, tc.req, defaults, id, tc.validate)
			wantCode(t, err, tc.want)
			if tc.want != nil {
				return
			}
			im := apply(t, base, recs...)
			tp, ok := im.Topic(tc.req.Name)
			if !ok || tp.ID != id {
				t.Fatalf("topic %q not created with id %s", tc.req.Name, id)
			}
			tc.check(t, tp)
		})
	}
}

func TestCreateTopicValidatorSeesConfigsAndKeepsCause(t *testing.T) {
	im := cluster(t, ids(1))
	var seen map[string]string
	cause := errors.New("nope")
	_, err := CreateTopic(im, CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"a": "b"}}, defaults, topicID(2),
		func(c map[string]string) error { seen = c; return cause })
	if !errors.Is(err, cause) || !reflect.DeepEqual(seen, map[string]string{"a": "b"}) {
		t.Fatalf("err = %v, validator saw %v", err, seen)
	}
}

func TestCreateTopicSplitsHugeTopicsIntoSeveralRecords(t *testing.T) {
	im := cluster(t, ids(1, 2, 3))
	recs, err := CreateTopic(im, CreateTopicRequest{Name: "huge", NumPartitions: 40_000, ReplicationFactor: 3}, defaults, topicID(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 2 {
		t.Fatalf("%d records, want the topic split", len(recs))
	}
	if _, ok := recs[0].(metadata.CreateTopic); !ok {
		t.Fatalf("first record is %T", recs[0])
	}
	for _, r := range recs {
		b, err := metadata.EncodeRecord(r)
		if err != nil {
			t.Fatalf("encode %T: %v", r, err)
		}
		if len(b) > metadata.MaxRecordBytes/2 {
			t.Fatalf("record of %d bytes is close to the limit", len(b))
		}
	}
	im = apply(t, im, recs...)
	tp, _ := im.Topic("huge")
	if len(tp.Partitions) != 40_000 {
		t.Fatalf("%d partitions", len(tp.Partitions))
	}
}

func TestCreateTopicIsDeterministic(t *testing.T) {
	im := cluster(t, ids(1, 2, 3, 4, 5), "a", "b", "c", "a", "b")
	req := CreateTopicRequest{Name: "same", NumPartitions: 12, ReplicationFactor: 3}
	a, err := CreateTopic(im, req, defaults, topicID(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := CreateTopic(im, req, defaults, topicID(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same inputs gave different records")
	}
}

func TestDeleteTopic(t *testing.T) {
	im := withTopic(t, cluster(t, ids(1)), "t", topicID(1), part(1, ids(1), ids(1), nil))
	recs, err := DeleteTopic(im, "t")
	wantCode(t, err, nil)
	if after := apply(t, im, recs...); after.TopicCount() != 0 {
		t.Fatal("topic not removed")
	}
	_, err = DeleteTopic(im, "missing")
	wantCode(t, err, kerr.UnknownTopicOrPartition)

	recs, err = DeleteTopicByID(im, topicID(1))
	wantCode(t, err, nil)
	if !reflect.DeepEqual(recs, []metadata.Record{metadata.RemoveTopic{ID: topicID(1)}}) {
		t.Fatalf("recs = %+v", recs)
	}
	_, err = DeleteTopicByID(im, topicID(9))
	wantCode(t, err, kerr.UnknownTopicID)
}

func TestCreatePartitions(t *testing.T) {
	base := withTopic(t, cluster(t, ids(1, 2, 3)), "t", topicID(1),
		part(1, ids(1, 2), ids(1, 2), nil),
		part(2, ids(2, 3), ids(2, 3), nil))
	tests := []struct {
		name        string
		topic       string
		total       int32
		assignments [][]int32
		want        *kerr.Error
		wantParts   []metadata.Partition // checked when set
	}{
		{name: "grow by placement", topic: "t", total: 5},
		{name: "grow by assignment", topic: "t", total: 3, assignments: [][]int32{{3, 1}},
			wantParts: []metadata.Partition{{Index: 2, Replicas: ids(3, 1), ISR: ids(3, 1), Leader: 3}}},
		{name: "unknown topic", topic: "nope", total: 3, want: kerr.UnknownTopicOrPartition},
		{name: "same count", topic: "t", total: 2, want: kerr.InvalidPartitions},
		{name: "shrink", topic: "t", total: 1, want: kerr.InvalidPartitions},
		{name: "above limit", topic: "t", total: metadata.MaxPartitionsPerTopic + 1, want: kerr.InvalidPartitions},
		{name: "assignment count mismatch", topic: "t", total: 4, assignments: [][]int32{{3, 1}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment wrong rf", topic: "t", total: 3, assignments: [][]int32{{3}}, want: kerr.InvalidReplicaAssignment},
		{name: "assignment unknown broker", topic: "t", total: 3, assignments: [][]int32{{3, 7}}, want: kerr.InvalidReplicaAssignment},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := CreatePartitions(base, tc.topic, tc.total, tc.assignments)
			wantCode(t, err, tc.want)
			if tc.want != nil {
				return
			}
			im := apply(t, base, recs...)
			tp, _ := im.Topic(tc.topic)
			if int32(len(tp.Partitions)) != tc.total {
				t.Fatalf("%d partitions, want %d", len(tp.Partitions), tc.total)
			}
			for _, p := range tp.Partitions[2:] {
				if len(p.Replicas) != 2 || p.Leader != p.Replicas[0] {
					t.Fatalf("new partition %+v", p)
				}
			}
			if tc.wantParts != nil && !reflect.DeepEqual(tp.Partitions[2:], tc.wantParts) {
				t.Fatalf("new partitions %+v, want %+v", tp.Partitions[2:], tc.wantParts)
			}
		})
	}
}

func TestCreatePartitionsContinuesCreationSequence(t *testing.T) {
	im := cluster(t, ids(1, 2, 3, 4))
	whole, err := CreateTopic(im, CreateTopicRequest{Name: "t", NumPartitions: 6, ReplicationFactor: 2}, defaults, topicID(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	small, err := CreateTopic(im, CreateTopicRequest{Name: "t", NumPartitions: 2, ReplicationFactor: 2}, defaults, topicID(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	grown := apply(t, im, small...)
	more, err := CreatePartitions(grown, "t", 6, nil)
	if err != nil {
		t.Fatal(err)
	}
	grown = apply(t, grown, more...)
	a, _ := apply(t, im, whole...).Topic("t")
	b, _ := grown.Topic("t")
	if !reflect.DeepEqual(a.Partitions, b.Partitions) {
		t.Fatalf("grown topic differs from one created at full size:\n%+v\n%+v", a.Partitions, b.Partitions)
	}
}

func TestAlterTopicConfigs(t *testing.T) {
	base := cluster(t, ids(1))
	base = apply(t, base, metadata.CreateTopic{Name: "t", ID: topicID(1), Configs: map[string]string{"keep": "1", "drop": "2"},
		Partitions: []metadata.Partition{{Replicas: ids(1), ISR: ids(1), Leader: 1}}})
	tests := []struct {
		name     string
		topic    string
		set      map[string]*string
		validate ConfigValidator
		want     *kerr.Error
		wantCfg  map[string]string
		wantRecs int
	}{
		{name: "set, change, delete", topic: "t", set: map[string]*string{"new": ptr("3"), "keep": ptr("1b"), "drop": nil},
			wantCfg: map[string]string{"keep": "1b", "new": "3"}, wantRecs: 3},
		{name: "no-ops produce no records", topic: "t", set: map[string]*string{"keep": ptr("1"), "absent": nil},
			wantCfg: map[string]string{"keep": "1", "drop": "2"}, wantRecs: 0},
		{name: "validator sees the result", topic: "t", set: map[string]*string{"drop": nil}, validate: rejectKey("drop"),
			wantCfg: map[string]string{"keep": "1"}, wantRecs: 1},
		{name: "validator rejects", topic: "t", set: map[string]*string{"bad": ptr("x")}, validate: rejectKey("bad"), want: kerr.InvalidConfig},
		{name: "empty key", topic: "t", set: map[string]*string{"": ptr("x")}, want: kerr.InvalidConfig},
		{name: "unknown topic", topic: "nope", set: map[string]*string{"a": ptr("b")}, want: kerr.UnknownTopicOrPartition},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := AlterTopicConfigs(base, tc.topic, tc.set, tc.validate)
			wantCode(t, err, tc.want)
			if tc.want != nil {
				return
			}
			if len(recs) != tc.wantRecs {
				t.Fatalf("%d records, want %d: %+v", len(recs), tc.wantRecs, recs)
			}
			tp, _ := apply(t, base, recs...).Topic("t")
			if !reflect.DeepEqual(tp.Configs, tc.wantCfg) {
				t.Fatalf("configs = %v, want %v", tp.Configs, tc.wantCfg)
			}
		})
	}
}
