package metadata

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/authz"
)

// sampleRecords has at least one fully populated record of every type.
func sampleRecords() []Record {
	return []Record{
		RegisterBroker{Broker: Broker{ID: 3, Rack: "a", Epoch: 7, Fenced: true, InControlledShutdown: true,
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092}, {Listener: "CONTROLLER", Host: "h", Port: 9093}},
			LogDirs:   []DirectoryID{idOf(8), idOf(9)}}},
		FenceBroker{ID: 3, Epoch: 7},
		UnfenceBroker{ID: 3, Epoch: 7},
		BeginControlledShutdown{ID: 3, Epoch: 7},
		UnregisterBroker{ID: 3},
		CreateTopic{Name: "t", ID: idOf(5), Configs: map[string]string{"a": "b"}, Partitions: []Partition{
			{Index: 0, Replicas: []int32{1, 2}, ISR: []int32{1}, ELR: []int32{2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9},
		}},
		CreateTopic{Name: "nil-fields", ID: idOf(6), Partitions: []Partition{{Index: 0, Replicas: []int32{1}, Leader: NoLeader}}},
		RemoveTopic{ID: idOf(5)},
		AddPartitions{TopicID: idOf(5), Partitions: []Partition{{Index: 1, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2}}},
		PartitionChange{TopicID: idOf(5), Partition: 1, Leader: ptr[int32](2), ISR: ptr([]int32{2}), ELR: ptr([]int32{}), Replicas: ptr([]int32{2, 1})},
		PartitionChange{TopicID: idOf(5), Partition: 0},
		SetTopicConfig{TopicID: idOf(5), Key: "k", Value: ptr("v")},
		SetTopicConfig{TopicID: idOf(5), Key: "k", Value: nil},
		SetTopicConfig{TopicID: idOf(5), Key: "k", Value: ptr("")},
		AllocateProducerIDs{NextID: 1 << 40},
		AccessControlEntry{ID: "acl-1", ResourceType: authz.ResourceTopic, ResourceName: "t", PatternType: authz.PatternPrefixed,
			Principal: "User:alice", Host: "10.0.0.1", Operation: authz.OpWrite, PermissionType: authz.PermissionDeny},
		RemoveAccessControlEntry{ID: "acl-1"},
		UserScramCredential{Name: "alice", Mechanism: "SCRAM-SHA-512", Salt: []byte("salt"), StoredKey: []byte{1, 2},
			ServerKey: []byte{3, 4}, Iterations: 8192},
		RemoveUserScramCredential{Name: "alice", Mechanism: "SCRAM-SHA-512"},
		ClientQuota{Entity: []QuotaEntityPart{{Type: QuotaEntityUser, Name: ptr("alice")}, {Type: QuotaEntityClientID}}, Key: QuotaProducerByteRate, Value: 1024},
		ClientQuota{Entity: []QuotaEntityPart{{Type: QuotaEntityClientID, Name: ptr("app")}}, Key: QuotaConsumerByteRate, Remove: true},
		FeatureLevel{Name: TransactionVersionFeature, Level: 2},
		ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "1", Name: "leader.replication.throttled.rate", Value: ptr("1048576")},
		ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "", Name: "leader.replication.throttled.rate"},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	covered := map[string]bool{}
	for _, rec := range sampleRecords() {
		b, err := EncodeRecord(rec)
		if err != nil {
			t.Fatalf("EncodeRecord(%T): %v", rec, err)
		}
		got, err := DecodeRecord(b)
		if err != nil {
			t.Fatalf("DecodeRecord(%s): %v", b, err)
		}
		if !reflect.DeepEqual(got, rec) {
			t.Fatalf("round trip of %T:\n got %#v\nwant %#v\njson %s", rec, got, rec, b)
		}
		name, _ := recordTypeName(rec)
		covered[name] = true
	}
	for name := range recordTypes {
		if !covered[name] {
			t.Errorf("record type %q has no round-trip sample", name)
		}
	}
}

func TestPartitionChangeDistinguishesNilFromEmpty(t *testing.T) {
	b, err := EncodeRecord(PartitionChange{TopicID: idOf(1), ELR: ptr([]int32{})})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	pc := rec.(PartitionChange)
	if pc.ISR != nil || pc.ELR == nil || len(*pc.ELR) != 0 {
		t.Fatalf("decoded %#v from %s", pc, b)
	}
}

func TestDecodeRecordToleratesUnknownFields(t *testing.T) {
	in := `{"v":1,"type":"fence_broker","future":true,"data":{"ID":4,"Epoch":2,"Reason":"new field"}}`
	rec, err := DecodeRecord([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if rec != (FenceBroker{ID: 4, Epoch: 2}) {
		t.Fatalf("decoded %#v", rec)
	}
}

func TestDecodeRecordRejects(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		isType bool
	}{
		{"not json", `nope`, false},
		{"unknown type", `{"v":1,"type":"teleport_broker","data":{}}`, true},
		{"missing type", `{"v":1,"data":{}}`, true},
		{"missing version", `{"type":"fence_broker","data":{}}`, false},
		{"future version", `{"v":2,"type":"fence_broker","data":{}}`, false},
		{"missing data", `{"v":1,"type":"fence_broker"}`, false},
		{"null data", `{"v":1,"type":"fence_broker","data":null}`, false},
		{"array data", `{"v":1,"type":"fence_broker","data":[]}`, false},
		{"wrong field type", `{"v":1,"type":"fence_broker","data":{"ID":"x"}}`, false},
		{"int overflow", `{"v":1,"type":"fence_broker","data":{"ID":4294967296}}`, false},
		{"bad topic id", `{"v":1,"type":"remove_topic","data":{"ID":"zz"}}`, false},
		{"too large", `{"v":1,"type":"fence_broker","data":{"x":"` + strings.Repeat("a", MaxRecordBytes) + `"}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := DecodeRecord([]byte(tc.in))
			if err == nil {
				t.Fatalf("decoded %#v, want error", rec)
			}
			if errors.Is(err, ErrUnknownRecordType) != tc.isType {
				t.Fatalf("errors.Is(ErrUnknownRecordType) = %v for %v", !tc.isType, err)
			}
		})
	}
}

func TestEncodeRecordRejectsUnsupported(t *testing.T) {
	for _, rec := range []Record{nil, &FenceBroker{}} {
		if _, err := EncodeRecord(rec); err == nil {
			t.Errorf("EncodeRecord(%#v) succeeded", rec)
		}
	}
}

// FuzzDecodeRecord checks that decoding never panics and that whatever
// decodes re-encodes to something that decodes to the same record.
func FuzzDecodeRecord(f *testing.F) {
	for _, rec := range sampleRecords() {
		b, err := EncodeRecord(rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"v":1,"type":"partition_change","data":{"ISR":null,"ELR":[]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := DecodeRecord(b)
		if err != nil {
			return
		}
		again, err := EncodeRecord(rec)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", rec, err)
		}
		back, err := DecodeRecord(again)
		if err != nil {
			t.Fatalf("decode re-encoded %s: %v", again, err)
		}
		if !reflect.DeepEqual(rec, back) {
			t.Fatalf("unstable round trip:\n first %#v\nsecond %#v", rec, back)
		}
		// Applying arbitrary decoded records must fail cleanly, never panic.
		_, _ = baseImage(t).Apply(rec)
	})
}
