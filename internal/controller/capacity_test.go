package controller

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// capacityCluster is brokers 1..3, broker 2 registered (RegisterBroker, as
// the controller decides it) saying it can keep capacity replicas open.
func capacityCluster(t *testing.T, capacity int32) *metadata.Image {
	t.Helper()
	im := cluster(t, ids(1, 3))
	recs, _, err := RegisterBroker(im, Registration{ID: 2, ReplicaCapacity: capacity, OpenFilesLimit: 20_000, PreviousBrokerEpoch: -1}, nil, nil)
	if err != nil {
		t.Fatalf("RegisterBroker: %v", err)
	}
	im = apply(t, im, recs...)
	if b, _ := im.Broker(2); b.ReplicaCapacity != capacity || b.OpenFilesLimit != 20_000 {
		t.Fatalf("broker 2 registered with a replica capacity of %d and an open-files limit of %d, want %d and 20000", b.ReplicaCapacity, b.OpenFilesLimit, capacity)
	}
	return im
}

func create(t *testing.T, im *metadata.Image, req CreateTopicRequest, id byte) (*metadata.Image, error) {
	t.Helper()
	recs, err := CreateTopic(im, req, Defaults{NumPartitions: 1, ReplicationFactor: 1}, topicID(id), nil)
	if err != nil {
		return im, err
	}
	return apply(t, im, recs...), nil
}

// wantCapacityRefusal checks a refusal names the broker, the replicas it
// would hold and its capacity, and says what to raise.
func wantCapacityRefusal(t *testing.T, err error, code *kerr.Error, parts ...string) {
	t.Helper()
	wantCode(t, err, code)
	for _, s := range append(parts, "open-files limit (RLIMIT_NOFILE) of 20000", "ulimit -n") {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("refusal %q does not say %q", err, s)
		}
	}
}

func TestCreateTopicWithinReplicaCapacity(t *testing.T) {
	im := capacityCluster(t, 10)
	// 10 partitions of 3 replicas on 3 brokers: 10 on each, broker 2 full.
	im, err := create(t, im, CreateTopicRequest{Name: "fits", NumPartitions: 10, ReplicationFactor: 3}, 1)
	wantCode(t, err, nil)
	// One replica more anywhere on broker 2 is refused, automatic or
	// manual placement alike; nothing is created.
	_, err = create(t, im, CreateTopicRequest{Name: "one-more", NumPartitions: 1, ReplicationFactor: 3}, 2)
	wantCapacityRefusal(t, err, kerr.InvalidPartitions, "broker 2 would hold 11 replicas (10 now, 1 more)", "than the 10")
	_, err = create(t, im, CreateTopicRequest{Name: "manual", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 3}, 1: {3, 2}}}, 3)
	wantCapacityRefusal(t, err, kerr.InvalidPartitions, "broker 2 would hold 11 replicas")
	if _, ok := im.Topic("one-more"); ok {
		t.Fatal("a refused topic exists")
	}
	// Brokers that state no capacity are not limited.
	_, err = create(t, im, CreateTopicRequest{Name: "elsewhere", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 3}, 1: {3, 1}}}, 4)
	wantCode(t, err, nil)
}

func TestCreateTopicBeyondReplicaCapacityAtOnce(t *testing.T) {
	im := capacityCluster(t, 1000)
	// The 20,000-partition case in small: more partitions than the broker
	// can open in one request are refused whole, before any is created.
	_, err := create(t, im, CreateTopicRequest{Name: "big", NumPartitions: 1001, ReplicationFactor: 3}, 1)
	wantCapacityRefusal(t, err, kerr.InvalidPartitions, "broker 2 would hold 1001 replicas (0 now, 1001 more)", "than the 1000")
	// RF 1 spreads the same count over three brokers: 334 on broker 2.
	_, err = create(t, im, CreateTopicRequest{Name: "spread", NumPartitions: 1001, ReplicationFactor: 1}, 2)
	wantCode(t, err, nil)
}

func TestCreatePartitionsBeyondReplicaCapacity(t *testing.T) {
	im := capacityCluster(t, 4)
	im, err := create(t, im, CreateTopicRequest{Name: "grow", NumPartitions: 3, ReplicationFactor: 3}, 1)
	wantCode(t, err, nil)
	_, err = CreatePartitions(im, "grow", 5, nil)
	wantCapacityRefusal(t, err, kerr.InvalidPartitions, "broker 2 would hold 5 replicas (3 now, 2 more)", "than the 4")
	_, err = CreatePartitions(im, "grow", 5, [][]int32{{1, 3, 2}, {3, 1, 2}})
	wantCapacityRefusal(t, err, kerr.InvalidPartitions, "broker 2 would hold 5 replicas")
	recs, err := CreatePartitions(im, "grow", 4, nil)
	wantCode(t, err, nil)
	im = apply(t, im, recs...)
	_, err = CreatePartitions(im, "grow", 5, nil)
	wantCapacityRefusal(t, err, kerr.InvalidPartitions, "broker 2 would hold 5 replicas (4 now, 1 more)")
}

func TestReassignmentBeyondReplicaCapacity(t *testing.T) {
	im := capacityCluster(t, 2)
	// Two partitions on brokers 1 and 3; broker 2 holds one replica of a
	// third, so it has room for one more.
	im, err := create(t, im, CreateTopicRequest{Name: "move", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 3}, 1: {3, 1}, 2: {2, 1}}}, 1)
	wantCode(t, err, nil)
	// In one request the second move onto broker 2 counts the first.
	recs, errs := AlterPartitionReassignments(im, []Reassignment{
		{Topic: "move", Partition: 0, Target: ids(2, 3)},
		{Topic: "move", Partition: 1, Target: ids(2, 1)},
	}, ReassignOptions{})
	wantCode(t, errs[0], nil)
	wantCapacityRefusal(t, errs[1], kerr.InvalidReplicaAssignment, "move/1: broker 2 would hold 3 replicas (2 now, 1 more)", "than the 2")
	im = apply(t, im, recs...)
	// Broker 2 being added to partition 0 counts while the move is under
	// way; a target keeping it there adds nothing, moving another replica
	// onto it is refused.
	_, err = ReassignPartition(im, Reassignment{Topic: "move", Partition: 0, Target: ids(2, 1)}, ReassignOptions{})
	wantCode(t, err, nil)
	_, err = ReassignPartition(im, Reassignment{Topic: "move", Partition: 1, Target: ids(3, 2)}, ReassignOptions{})
	wantCapacityRefusal(t, err, kerr.InvalidReplicaAssignment, "move/1: broker 2 would hold 3 replicas")
	// Moving replicas off the full broker is not held to its capacity.
	_, err = ReassignPartition(im, Reassignment{Topic: "move", Partition: 2, Target: ids(3, 1)}, ReassignOptions{})
	wantCode(t, err, nil)
}

func TestReRegistrationChangesReplicaCapacity(t *testing.T) {
	im := capacityCluster(t, 2)
	im, err := create(t, im, CreateTopicRequest{Name: "t", NumPartitions: 2, ReplicationFactor: 3}, 1)
	wantCode(t, err, nil)
	_, err = create(t, im, CreateTopicRequest{Name: "u", NumPartitions: 1, ReplicationFactor: 3}, 2)
	wantCode(t, err, kerr.InvalidPartitions)
	// Restarted with a higher limit: its registration says so, and the
	// topic now fits. With log.open.files.per.replica=0 it states none.
	for _, capacity := range []int32{3, 0} {
		recs, _, err := RegisterBroker(im, Registration{ID: 2, ReplicaCapacity: capacity, PreviousBrokerEpoch: -1}, nil, nil)
		wantCode(t, err, nil)
		next := apply(t, im, recs...)
		_, err = create(t, next, CreateTopicRequest{Name: "u", NumPartitions: 1, ReplicationFactor: 3}, 2)
		wantCode(t, err, nil)
		_, err = create(t, next, CreateTopicRequest{Name: "u", NumPartitions: 2, ReplicationFactor: 3}, 2)
		if capacity == 0 {
			wantCode(t, err, nil)
		} else {
			wantCode(t, err, kerr.InvalidPartitions)
		}
	}
}
