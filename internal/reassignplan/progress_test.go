package reassignplan

import (
	"testing"
	"time"
)

func TestEstimateCatchUp(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration, behind int64) ProgressSample {
		return ProgressSample{At: t0.Add(d), Behind: behind}
	}
	cases := []struct {
		name      string
		prev, now ProgressSample
		wantRate  float64
		wantLeft  time.Duration
		wantKnown bool
	}{
		{"closing at 8 MiB/s", at(0, 100<<20), at(2*time.Second, 84<<20), 8 << 20, 11 * time.Second, true},
		{"rounds the rest up to a whole second", at(0, 1000), at(time.Second, 900), 100, 9 * time.Second, true},
		{"done", at(0, 5<<20), at(time.Second, 0), 5 << 20, 0, true},
		{"not gaining: the leader grows as fast", at(0, 10<<20), at(time.Second, 10<<20), 0, 0, false},
		{"falling behind", at(0, 10<<20), at(time.Second, 12<<20), -(2 << 20), 0, false},
		{"samples out of order", at(time.Second, 10), at(0, 5), 0, 0, false},
		{"same instant", at(0, 10), at(0, 5), 0, 0, false},
		{"too slow to mean anything", at(0, 1<<40+1), at(time.Second, 1<<40), 1, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := EstimateCatchUp(c.prev, c.now)
			if got.BytesPerSecond != c.wantRate || got.Known != c.wantKnown || (c.wantKnown && got.Left != c.wantLeft) {
				t.Fatalf("EstimateCatchUp = %+v, want rate %v, left %v, known %v", got, c.wantRate, c.wantLeft, c.wantKnown)
			}
		})
	}
}
