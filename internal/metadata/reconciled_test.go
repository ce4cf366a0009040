package metadata

import (
	"reflect"
	"slices"
	"testing"
)

// visited names the partitions c lists as "topic-index".
func visited(c Changes) []string {
	var out []string
	for _, p := range c.Partitions {
		out = append(out, p.Topic.Name+"-"+string(rune('0'+p.Partition.Index)))
	}
	return out
}

func TestReconciledChanges(t *testing.T) {
	var r Reconciled
	im := baseImage(t)
	if c := r.Changes(im, 1, 10); !c.Full {
		t.Fatalf("first Changes = %+v, want Full", c)
	}
	r.Done(im, 1, 10)
	if c := r.Changes(im.WithVersion(7), 1, 10); c.Full || len(c.Partitions) > 0 || len(c.Removed) > 0 {
		t.Fatalf("same image: %+v, want nothing", c)
	}

	// One partition's ISR shrinks: only it is visited.
	next := mustApply(t, im, PartitionChange{TopicID: idOf(1), Partition: 1, ISR: ptr([]int32{2, 3})})
	if got := visited(r.Changes(next, 1, 10)); !reflect.DeepEqual(got, []string{"orders-1"}) {
		t.Fatalf("ISR change visits %v, want [orders-1]", got)
	}
	// A registration other than the reconciled one: everything.
	if c := r.Changes(next, 1, 11); !c.Full {
		t.Fatalf("new epoch: %+v, want Full", c)
	}
	r.Done(next, 1, 10)

	// A config change visits the whole topic; a new topic all of its own.
	next2 := mustApply(t, next, SetTopicConfig{TopicID: idOf(1), Key: "retention.ms", Value: ptr("2000")},
		CreateTopic{Name: "pay", ID: idOf(2), Partitions: []Partition{partition(0, 2, 2, 3)}})
	if got := visited(r.Changes(next2, 1, 10)); !reflect.DeepEqual(got, []string{"orders-0", "orders-1", "pay-0"}) {
		t.Fatalf("config change and new topic visit %v", got)
	}
	r.Done(next2, 1, 10)

	// A removed topic is listed as removed.
	next3 := mustApply(t, next2, RemoveTopic{ID: idOf(1)})
	if c := r.Changes(next3, 1, 10); c.Full || len(c.Partitions) > 0 || !reflect.DeepEqual(c.Removed, []TopicID{idOf(1)}) {
		t.Fatalf("removed topic: %+v", c)
	}

	// After a failed reconcile, everything again.
	r.Forget()
	if c := r.Changes(next3, 1, 10); !c.Full {
		t.Fatalf("after Forget: %+v, want Full", c)
	}
}

// TestPartitionEqualCoversEveryField changes each field of a partition in
// turn: Equal must notice every one, or a reconcile would skip a change.
func TestPartitionEqualCoversEveryField(t *testing.T) {
	base := Partition{Index: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ELR: []int32{3}, Leader: 1,
		LeaderEpoch: 4, PartitionEpoch: 5, AddingReplicas: []int32{2}, RemovingReplicas: []int32{3}}
	if !base.Equal(base.Clone()) {
		t.Fatal("a partition differs from its clone")
	}
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		q := base.Clone()
		f := reflect.ValueOf(&q).Elem().Field(i)
		switch f.Kind() {
		case reflect.Int32:
			f.SetInt(f.Int() + 1)
		case reflect.Slice:
			f.Set(reflect.ValueOf(append(slices.Clone(f.Interface().([]int32)), 9)))
		default:
			t.Fatalf("field %s of kind %s: teach this test (and Equal) about it", v.Type().Field(i).Name, f.Kind())
		}
		if base.Equal(q) {
			t.Errorf("Equal misses a change of %s", v.Type().Field(i).Name)
		}
	}
}
