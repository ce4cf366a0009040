package reassignplan

import (
	"math"
	"time"
)

// ProgressSample is how far the added replicas of some reassignments were
// behind their leaders (the sum of BytesBehind) at one moment, as the tools
// read it from DescribeLogDirs.
type ProgressSample struct {
	At     time.Time
	Behind int64
}

// CatchUp is the rate at which the distance between two samples closed,
// and how long the rest takes at that rate.
type CatchUp struct {
	// BytesPerSecond is the net rate: bytes copied per second minus what
	// producers added to the leaders meanwhile. Zero or less means the
	// replicas did not gain on their leaders between the samples.
	BytesPerSecond float64
	// Left is the time to copy what is still behind at BytesPerSecond;
	// only meaningful when Known.
	Left time.Duration
	// Known is false when the rate says nothing about the end: the
	// samples are not in order, or the replicas did not gain.
	Known bool
}

// EstimateCatchUp compares two samples of the same reassignments taken in
// order. The rate is the net one (an ETA under a steady produce load must
// count what keeps arriving), so a replica that copies as fast as the
// leader grows has no ETA: it never finishes at that rate. The ETA is a
// linear extrapolation and says so in its name only: a throttle change or
// a load change makes it wrong, and the next sample corrects it.
func EstimateCatchUp(prev, now ProgressSample) CatchUp {
	elapsed := now.At.Sub(prev.At)
	if elapsed <= 0 {
		return CatchUp{}
	}
	rate := float64(prev.Behind-now.Behind) / elapsed.Seconds()
	c := CatchUp{BytesPerSecond: rate}
	if now.Behind == 0 {
		c.Known = true
		return c
	}
	if rate <= 0 {
		return c
	}
	secs := float64(now.Behind) / rate
	// A rate of a few bytes a second over a large distance would overflow
	// a Duration; past a year the ETA means "not in any useful time".
	if secs > float64(365*24*time.Hour/time.Second) {
		return c
	}
	c.Left = time.Duration(math.Ceil(secs)) * time.Second
	c.Known = true
	return c
}
