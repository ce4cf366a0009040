package hdrhist

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestBucketsCoverEveryValue(t *testing.T) {
	// Every value lies in a bucket whose upper bound is >= it and within
	// 1/128 of it, and buckets are contiguous.
	for i := 1; i < buckets; i++ {
		if upper(i) <= upper(i-1) {
			t.Fatalf("bucket %d: upper %d after %d", i, upper(i), upper(i-1))
		}
		lo := upper(i-1) + 1
		if index(lo) != i || index(upper(i)) != i {
			t.Fatalf("bucket %d [%d,%d]: index(lo)=%d index(hi)=%d", i, lo, upper(i), index(lo), index(upper(i)))
		}
		if lo >= sub && float64(upper(i)-lo+1)/float64(lo) > 1.0/sub {
			t.Fatalf("bucket %d [%d,%d] is wider than 1/%d of its values", i, lo, upper(i), sub)
		}
		if upper(i) == ^uint64(0) {
			return
		}
	}
	t.Fatalf("buckets end at %d, below the largest uint64", upper(buckets-1))
}

func TestQuantilesMatchSorted(t *testing.T) {
	var h Histogram
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]time.Duration, 100_000)
	for i := range vals {
		// Log-uniform from 1 µs to 1 s, like latencies.
		vals[i] = time.Duration(float64(time.Microsecond) * math.Pow(1e6, r.Float64()))
		h.Record(vals[i])
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		want := vals[int(q*float64(len(vals)))-1]
		got := h.Quantile(q)
		if got < want || float64(got-want) > float64(want)/sub {
			t.Errorf("q%.3f: got %v, exact %v", q, got, want)
		}
	}
	if h.Max() != vals[len(vals)-1] || h.Count() != uint64(len(vals)) {
		t.Errorf("max %v count %d", h.Max(), h.Count())
	}
	var sum time.Duration
	for _, v := range vals {
		sum += v
	}
	if h.Mean() != sum/time.Duration(len(vals)) {
		t.Errorf("mean %v, want %v", h.Mean(), sum/time.Duration(len(vals)))
	}
}

func TestEmptyAndConcurrent(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Mean() != 0 || h.Max() != 0 {
		t.Fatal("empty histogram reports values")
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				h.Record(time.Duration(g*1000 + i))
			}
		}()
	}
	wg.Wait()
	if h.Count() != 4000 || h.Max() != 3999 {
		t.Fatalf("count %d max %v", h.Count(), h.Max())
	}
	if q := h.Quantile(0.5); q < 1999 || q > 2016 {
		t.Fatalf("median %v", q)
	}
}
