package invariant

import "testing"

func TestBroken(t *testing.T) {
	defer func() {
		r := recover()
		if Panics && r == nil {
			t.Fatal("Broken did not panic with the invariants tag")
		}
		if !Panics && r != nil {
			t.Fatalf("Broken panicked without the invariants tag: %v", r)
		}
	}()
	if got := Broken("hw %d < %d", 1, 2); got != "hw 1 < 2" {
		t.Fatalf("Broken = %q", got)
	}
}
