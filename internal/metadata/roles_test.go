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
