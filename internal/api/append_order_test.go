package api

import (
	"slices"
	"testing"
)

// A later part that is ready first waits for the earlier one; keys are
// independent; a queue is forgotten once it has run everything.
func TestAppendOrderKeepsRequestOrder(t *testing.T) {
	var o appendOrder
	k1 := appendKey{partition: 1, producer: 7}
	k2 := appendKey{partition: 2, producer: 7}
	var ran []string
	first, second := o.join(k1), o.join(k1)
	other := o.join(k2)
	if !o.waiting(k1) || !o.waiting(k2) {
		t.Fatal("queues with turns not yet run are not waiting")
	}
	o.ready(second, func() { ran = append(ran, "second") })
	if len(ran) != 0 {
		t.Fatalf("the later turn ran before the earlier one: %v", ran)
	}
	o.ready(other, func() { ran = append(ran, "other") })
	o.ready(first, func() { ran = append(ran, "first") })
	if want := []string{"other", "first", "second"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
	if o.waiting(k1) || o.waiting(k2) || len(o.queues) != 0 {
		t.Fatalf("queues left after every turn ran: %v", o.queues)
	}
}

// A turn made ready while the head's run is running (a run that makes
// the next part ready, as an inline verification answer does) runs after
// it, not inside it.
func TestAppendOrderReadyDuringRun(t *testing.T) {
	var o appendOrder
	k := appendKey{partition: 1, producer: 7}
	a, b := o.join(k), o.join(k)
	var ran []string
	o.ready(a, func() {
		o.ready(b, func() { ran = append(ran, "b") })
		ran = append(ran, "a")
	})
	if want := []string{"a", "b"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}
