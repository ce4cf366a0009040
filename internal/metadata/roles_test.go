package metadata

import "testing"

// restartImages is the history a restarted broker 1 meets: stale is what it
// replays from its own log (it leads orders-0, registered at epoch 10);
// while it was down the controller fenced it and moved the leadership to
// broker 2; fresh then holds its new registration
// at epoch 40.
func restartImages(t *testing.T) (stale, fenced, fresh *Image) {
	t.Helper()
	stale = baseImage(t)
	fenced = mustApply(t, stale,
		FenceBroker{ID: 1, Epoch: 10},
		PartitionChange{TopicID: idOf(1), Partition: 0, Leader: ptr[int32](2), ISR: &[]int32{2, 3}},
	)
	fresh = mustApply(t, fenced, broker(1, 40))
	return stale, fenced, fresh
}

func TestCaughtUpFor(t *testing.T) {
	stale, fenced, fresh := restartImages(t)
	tests := []struct {
		name  string
		im    *Image
		id    int32
		epoch int64
		want  bool
	}{
		{"not registered yet: no image will do", fresh, 1, -1, false},
		{"stale replay holds the previous incarnation", stale, 1, 40, false},
		{"image between fencing and registration", fenced, 1, 40, false},
		{"image holding this registration", fresh, 1, 40, true},
		{"registration superseded by a newer one", fresh, 1, 10, false},
		{"broker unknown to the image", fresh, 9, 1, false},
		{"another broker's registration does not count", fresh, 2, 40, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.im.CaughtUpFor(tt.id, tt.epoch); got != tt.want {
				t.Fatalf("CaughtUpFor(%d, %d) on version with broker %v = %v, want %v", tt.id, tt.epoch, brokerOf(tt.im, tt.id), got, tt.want)
			}
		})
	}
}

func brokerOf(im *Image, id int32) any {
	if br, ok := im.Broker(id); ok {
		return *br
	}
	return "none"
}

func TestReplicaRole(t *testing.T) {
	stale, _, fresh := restartImages(t)
	leaderless := mustApply(t, fresh, PartitionChange{TopicID: idOf(1), Partition: 1, Leader: ptr(NoLeader), ISR: &[]int32{}, ELR: &[]int32{2}})
	part := func(im *Image, index int32) Partition {
		t.Helper()
		tp, ok := im.TopicByID(idOf(1))
		if !ok {
			t.Fatal("no topic orders")
		}
		return tp.Partitions[index]
	}
	tests := []struct {
		name  string
		im    *Image
		id    int32
		epoch int64
		p     Partition
		want  ReplicaRole
	}{
		// The bug this rule closes: the stale replay says broker 1 leads
		// orders-0, and its new incarnation is registered.
		{"stale image naming this broker leader", stale, 1, 40, part(stale, 0), RoleNone},
		{"stale image naming another leader: no fetching either", stale, 1, 40, part(stale, 1), RoleNone},
		{"before registration", fresh, 1, -1, part(fresh, 0), RoleNone},
		{"caught up, led elsewhere", fresh, 1, 40, part(fresh, 0), RoleFollower},
		{"caught up, led here", fresh, 2, 20, part(fresh, 0), RoleLeader},
		{"caught up, leaderless", leaderless, 1, 40, part(leaderless, 1), RoleNone},
		{"not a replica of the partition", fresh, 4, 40, part(fresh, 0), RoleNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.im.ReplicaRole(tt.id, tt.epoch, tt.p); got != tt.want {
				t.Fatalf("ReplicaRole(%d, %d, %+v) = %v, want %v", tt.id, tt.epoch, tt.p, got, tt.want)
			}
		})
	}
}

// TestRetired: a replica the image no longer lists is deleted only on an
// image caught up for the broker's registration. The stale replay of a
// restarted broker 1 predates a reassignment that added it to a new
// topic's partition (and so does not list it there); deleting on it would
// throw away what broker 1 holds as an ISR member.
func TestRetired(t *testing.T) {
	stale, _, fresh := restartImages(t)
	// Later, orders-1 moves off broker 1 and partition 0 of "new" is
	// created on it.
	fresh = mustApply(t, fresh, PartitionChange{TopicID: idOf(1), Partition: 1, Replicas: &[]int32{2, 3}, ISR: &[]int32{2, 3}},
		CreateTopic{Name: "new", ID: idOf(2), Partitions: []Partition{partition(0, 1, 1)}})
	tests := []struct {
		name  string
		im    *Image
		topic TopicID
		index int32
		want  bool
	}{
		{"still listed", fresh, idOf(1), 0, false},
		{"reassigned away, caught up", fresh, idOf(1), 1, true},
		{"unknown to a stale replay", stale, idOf(2), 0, false},
		{"topic deleted, caught up", mustApply(t, fresh, RemoveTopic{ID: idOf(2)}), idOf(2), 0, true},
		{"no such partition, caught up", fresh, idOf(1), 7, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.im.Retired(1, 40, tt.topic, tt.index); got != tt.want {
				t.Fatalf("Retired = %v, want %v", got, tt.want)
			}
		})
	}
	if stale.Lists(1, idOf(2), 0) || !fresh.Lists(1, idOf(2), 0) || fresh.Lists(1, idOf(1), 1) {
		t.Fatal("Lists disagrees with the images")
	}
}
