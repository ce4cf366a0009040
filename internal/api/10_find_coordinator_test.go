package api

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/metadata"
)

func mustApply(t *testing.T, im *metadata.Image, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	next, err := im.Apply(recs...)
	if err != nil {
		t.Fatalf("apply %+v: %v", recs, err)
	}
	return next
}

// coordinatorImage has brokers 1-3 with an internal and an external
// listener each, and __consumer_offsets with 4 partitions led by brokers
// 1, 2, 3 and none.
func coordinatorImage(t *testing.T) *metadata.Image {
	im := metadata.Empty("test")
	for id := int32(1); id <= 3; id++ {
		im = mustApply(t, im, metadata.RegisterBroker{Broker: metadata.Broker{ID: id, Epoch: 10, Endpoints: []metadata.Endpoint{
			{Listener: "INTERNAL", Host: "10.0.0.1", Port: 9000 + id},
			{Listener: "EXTERNAL", Host: "broker.example", Port: 19000 + id},
		}}})
	}
	leaders := []int32{1, 2, 3, metadata.NoLeader}
	var parts []metadata.Partition
	for i, l := range leaders {
		parts = append(parts, metadata.Partition{Index: int32(i), Leader: l, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}})
	}
	im = mustApply(t, im, metadata.CreateTopic{Name: OffsetsTopic, ID: metadata.TopicID{1, 2, 3}, Partitions: parts})
	// __transaction_state's leaders are the other way round.
	slices.Reverse(parts)
	for i := range parts {
		parts[i].Index = int32(i)
	}
	return mustApply(t, im, metadata.CreateTopic{Name: TransactionStateTopic, ID: metadata.TopicID{4, 5, 6}, Partitions: parts})
}

// groupOnPartition finds a group id that maps to the partition.
func groupOnPartition(t *testing.T, partition int32) string {
	for i := range 1000 {
		id := "g" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if group.PartitionFor(id, 4) == partition {
			return id
		}
	}
	t.Fatalf("no group id maps to partition %d", partition)
	return ""
}

func TestFindCoordinatorAnswers(t *testing.T) {
	im := coordinatorImage(t)
	fenced := mustApply(t, im, metadata.FenceBroker{ID: 2, Epoch: 10})
	created := errors.New("boom")
	cases := []struct {
		name     string
		im       *metadata.Image
		keyType  int8
		key      string
		tooMany  bool
		err      error
		wantCode int16
		wantNode int32
		wantPort int32
	}{
		{name: "leader on the client's listener", im: im, key: groupOnPartition(t, 1), wantNode: 2, wantPort: 19002},
		{name: "another partition", im: im, key: groupOnPartition(t, 2), wantNode: 3, wantPort: 19003},
		{name: "partition without leader", im: im, key: groupOnPartition(t, 3), wantCode: kerr.CoordinatorNotAvailable.Code, wantNode: -1, wantPort: -1},
		{name: "fenced leader", im: fenced, key: groupOnPartition(t, 1), wantCode: kerr.CoordinatorNotAvailable.Code, wantNode: -1, wantPort: -1},
		{name: "no offsets topic", im: metadata.Empty("x"), key: "g", wantCode: kerr.CoordinatorNotAvailable.Code, wantNode: -1, wantPort: -1},
		{name: "creation failed", im: im, key: "g", err: created, wantCode: kerr.UnknownServerError.Code, wantNode: -1, wantPort: -1},
		{name: "creation refused", im: im, key: "g", err: kerr.CoordinatorNotAvailable, wantCode: kerr.CoordinatorNotAvailable.Code, wantNode: -1, wantPort: -1},
		// The same hash, on __transaction_state: partition 1 is led by 3.
		{name: "transactional id", im: im, keyType: coordinatorTypeTransaction, key: groupOnPartition(t, 1), wantNode: 3, wantPort: 19003},
		{name: "transactional id without leader", im: im, keyType: coordinatorTypeTransaction, key: groupOnPartition(t, 0), wantCode: kerr.CoordinatorNotAvailable.Code, wantNode: -1, wantPort: -1},
		{name: "empty transactional id", im: im, keyType: coordinatorTypeTransaction, key: "", wantCode: kerr.InvalidRequest.Code, wantNode: -1, wantPort: -1},
		{name: "no transaction state topic", im: metadata.Empty("x"), keyType: coordinatorTypeTransaction, key: "tx", wantCode: kerr.CoordinatorNotAvailable.Code, wantNode: -1, wantPort: -1},
		{name: "unknown key type", im: im, keyType: 7, key: "g", wantCode: kerr.InvalidRequest.Code, wantNode: -1, wantPort: -1},
		{name: "empty group id", im: im, key: "", wantCode: kerr.InvalidGroupID.Code, wantNode: -1, wantPort: -1},
		{name: "too many keys", im: im, key: "g", tooMany: true, wantCode: kerr.InvalidRequest.Code, wantNode: -1, wantPort: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := findCoordinator(tc.im, "EXTERNAL", tc.keyType, tc.key, tc.tooMany, tc.err)
			if c.ErrorCode != tc.wantCode || c.NodeID != tc.wantNode || c.Port != tc.wantPort || c.Key != tc.key {
				t.Fatalf("got code %d node %d port %d key %q, want code %d node %d port %d key %q",
					c.ErrorCode, c.NodeID, c.Port, c.Key, tc.wantCode, tc.wantNode, tc.wantPort, tc.key)
			}
			if tc.wantCode != 0 && c.ErrorMessage == nil {
				t.Fatalf("error %d without a message", c.ErrorCode)
			}
		})
	}
}

func TestParseGroupStates(t *testing.T) {
	states, none := parseGroupStates([]string{"stable", "Empty", "bogus"})
	if none || len(states) != 2 || states[0] != group.Stable || states[1] != group.Empty {
		t.Fatalf("got %v none=%v", states, none)
	}
	if _, none := parseGroupStates([]string{"bogus"}); !none {
		t.Fatal("a filter of unknown states must match nothing")
	}
	if states, none := parseGroupStates(nil); none || states != nil {
		t.Fatal("no filter must match everything")
	}
}

func TestClientHostAsKafkaShowsIt(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1": "/127.0.0.1", "::1": "/::1", "10.1.2.3:9092": "/10.1.2.3"} {
		if got := clientHost(in); got != want {
			t.Errorf("clientHost(%q) = %q, want %q", in, got, want)
		}
	}
}
