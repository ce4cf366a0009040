package vfs

import "testing"

func TestMemSpaceFollowsCapacityAndUsage(t *testing.T) {
	m := NewMem()
	m.SetCapacity(1000)
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Create(m, "/d/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 300)); err != nil {
		t.Fatal(err)
	}
	if s, err := m.Space("/d"); err != nil || s.Total != 1000 || s.Free != 700 {
		t.Fatalf("space %+v %v, want 1000 total, 700 free", s, err)
	}
	m.SetCapacity(200) // below usage: nothing is free
	if s, _ := m.Space("/d"); s.Free != 0 {
		t.Fatalf("free %d over capacity, want 0", s.Free)
	}
}

func TestOSSpace(t *testing.T) {
	s, err := OS{}.Space(t.TempDir())
	if err != nil {
		t.Skipf("no statfs here: %v", err)
	}
	if s.Total <= 0 || s.Free < 0 || s.Free > s.Total {
		t.Fatalf("implausible space %+v", s)
	}
}

func TestMemSetSpaceReportsChosenSpace(t *testing.T) {
	m := NewMem()
	m.SetSpace("/a/b", Space{Total: 100, Free: 7})
	if s, _ := m.Space("/a/b/c/d"); s != (Space{Total: 100, Free: 7}) {
		t.Fatalf("below the chosen directory: %+v", s)
	}
	if s, _ := m.Space("/a"); s.Free == 7 {
		t.Fatalf("above the chosen directory: %+v", s)
	}
	m.ClearSpace("/a/b")
	if s, _ := m.Space("/a/b"); s.Free == 7 {
		t.Fatalf("after ClearSpace: %+v", s)
	}
}
