// Package hdrhist is a latency histogram in the manner of HdrHistogram:
// log-linear buckets (each power of two split into 128 linear
// sub-buckets), so any recorded value is reported within 1/128 (< 0.8%)
// of itself, from 1 ns to hours, in a fixed 60 KiB of counters.
// Recording is one atomic add: many producers' callbacks record into one
// histogram without a lock, and nothing allocates per value.
package hdrhist

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// subBits is log2 of the sub-buckets per power of two.
const subBits = 7

const (
	sub     = 1 << subBits
	buckets = sub + (64-subBits)*sub
)

// Histogram counts durations. The zero value is ready to use.
type Histogram struct {
	counts [buckets]atomic.Uint64
	total  atomic.Uint64
	max    atomic.Int64
	sum    atomic.Int64
}

// index maps v >= 0 to its bucket: values below 128 have one bucket each;
// above, v's top 8 bits pick the bucket of its power of two.
func index(v uint64) int {
	if v < sub {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	return sub + shift*sub + int(v>>uint(shift)) - sub
}

// upper returns the largest value that falls in bucket i, so percentiles
// are never reported lower than what was recorded.
func upper(i int) uint64 {
	if i < sub {
		return uint64(i)
	}
	shift := (i - sub) / sub
	mant := uint64(i-sub-shift*sub) + sub
	return (mant+1)<<uint(shift) - 1
}

// Record adds one duration (negative ones count as zero).
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[index(uint64(v))].Add(1)
	h.total.Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total.Load() }

// Max is the largest recorded value, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Mean is the average of the recorded values, exactly (0 when empty).
func (h *Histogram) Mean() time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / int64(n))
}

// Quantile returns the value at or below which a fraction q (0..1] of the
// recorded values lie, rounded up to its bucket's upper bound and capped
// at Max; 0 when empty. Call it when recording has stopped.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(q * float64(n))
	if float64(rank) < q*float64(n) {
		rank++ // ceil: the q-quantile of 1000 values at q=0.999 is the 999th
	}
	rank = min(max(rank, 1), n)
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return min(time.Duration(upper(i)), h.Max())
		}
	}
	return h.Max()
}
