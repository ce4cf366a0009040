package replthrottle

import (
	"errors"
	"math"
	"testing"
)

func TestParseReplicas(t *testing.T) {
	tests := []struct {
		in      string
		has     []Replica
		hasNot  []Replica
		wantErr bool
	}{
		{in: "", hasNot: []Replica{{0, 1}}},
		{in: "  ", hasNot: []Replica{{0, 1}}},
		{in: "*", has: []Replica{{0, 1}, {7, 99}}},
		{in: "0:1,0:2, 3:4 ", has: []Replica{{0, 1}, {0, 2}, {3, 4}}, hasNot: []Replica{{1, 1}, {0, 3}, {4, 3}}},
		{in: "0:1,", wantErr: true},
		{in: "0", wantErr: true},
		{in: "a:1", wantErr: true},
		{in: "0:-1", wantErr: true},
		{in: "0:1:2", wantErr: true},
		{in: "*,0:1", wantErr: true},
		{in: "99999999999:1", wantErr: true},
	}
	for _, tt := range tests {
		r, err := ParseReplicas(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrInvalidList) {
				t.Errorf("ParseReplicas(%q) err = %v, want ErrInvalidList", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseReplicas(%q): %v", tt.in, err)
			continue
		}
		for _, h := range tt.has {
			if !r.Has(h.Partition, h.Broker) {
				t.Errorf("ParseReplicas(%q).Has(%d,%d) = false", tt.in, h.Partition, h.Broker)
			}
		}
		for _, h := range tt.hasNot {
			if r.Has(h.Partition, h.Broker) {
				t.Errorf("ParseReplicas(%q).Has(%d,%d) = true", tt.in, h.Partition, h.Broker)
			}
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	entries := []Replica{{0, 1}, {2, 3}}
	s := Format(entries)
	if s != "0:1,2:3" {
		t.Fatalf("Format = %q", s)
	}
	r, err := ParseReplicas(s)
	if err != nil || !r.Has(2, 3) || r.Has(1, 1) {
		t.Fatalf("round trip of %q: %v", s, err)
	}
}

func TestBucketSteps(t *testing.T) {
	type step struct {
		at      int64
		take    int
		allowed int  // expected Allowance before take
		ok      bool // expected ok
		wait    int64
	}
	tests := []struct {
		name  string
		rate  int64
		steps []step
	}{
		{"unlimited", Unlimited, []step{{at: 0, take: 1 << 30, allowed: math.MaxInt, ok: true}, {at: 1, allowed: math.MaxInt, ok: true}}},
		{"zero is unlimited", 0, []step{{at: 0, take: 1 << 30, allowed: math.MaxInt, ok: true}}},
		{"burst then refill", 1000, []step{
			{at: 0, take: 1000, allowed: 1000, ok: true},
			{at: 0, allowed: 0, ok: false, wait: 1},
			{at: 500, take: 500, allowed: 500, ok: true},
			{at: 10_000, allowed: 1000, ok: true}, // capped at one second's burst
		}},
		{"debt of a whole batch is paid off first", 1000, []step{
			{at: 0, take: 3000, allowed: 1000, ok: true}, // one big batch: 2000 in debt
			{at: 1000, allowed: 0, ok: false, wait: 1001},
			{at: 2000, allowed: 0, ok: false, wait: 1},
			{at: 2001, allowed: 1, ok: true},
		}},
		{"time going backwards earns nothing", 1000, []step{
			{at: 1000, take: 1000, allowed: 1000, ok: true},
			{at: 500, allowed: 0, ok: false, wait: 501},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBucket(tt.rate)
			for i, s := range tt.steps {
				got, ok := b.Allowance(s.at)
				if got != s.allowed || ok != s.ok {
					t.Fatalf("step %d: Allowance(%d) = %d, %v; want %d, %v", i, s.at, got, ok, s.allowed, s.ok)
				}
				if w := b.WaitMs(s.at); w != s.wait {
					t.Fatalf("step %d: WaitMs(%d) = %d, want %d", i, s.at, w, s.wait)
				}
				b.Take(s.take, s.at)
			}
		})
	}
}

// TestBucketLongRunRate drives a reader that takes whole 64 KiB batches
// whenever allowed, every 10 ms for a minute: what it got stays within
// rate×t plus one second's burst and one batch.
func TestBucketLongRunRate(t *testing.T) {
	const rate = 1 << 20
	const batch = 64 << 10
	b := NewBucket(rate)
	total := 0
	for now := int64(0); now <= 60_000; now += 10 {
		if _, ok := b.Allowance(now); ok {
			b.Take(batch, now)
			total += batch
		}
		upper := rate*int(now)/1000 + rate + batch
		if total > upper {
			t.Fatalf("at %d ms: %d bytes, over the bound %d", now, total, upper)
		}
	}
	lower := rate * 60 * 99 / 100
	if total < lower {
		t.Fatalf("a minute gave %d bytes, under 99%% of the rate (%d)", total, lower)
	}
}

func TestSetRateLowersBurst(t *testing.T) {
	b := NewBucket(1000)
	b.Allowance(0)
	b.SetRate(100)
	if got, _ := b.Allowance(0); got != 100 {
		t.Fatalf("after lowering the rate Allowance = %d, want 100", got)
	}
	b.SetRate(Unlimited)
	if _, ok := b.Allowance(0); !ok {
		t.Fatal("unlimited bucket refused a read")
	}
}
