// Package invariant is the one switch between the two ways a broken
// invariant is handled. A core that sees an impossible state (a high
// watermark going back, a log that refused what the replication state
// allowed) reports it with Broken, then returns it as data: the simulator
// turns it into a violation that names the seed, the broker logs it and
// fences the partition. Built with `-tags invariants`, Broken panics at the
// spot instead, so a test run stops with the stack that found it.
package invariant

import "fmt"

// Broken reports a broken invariant and returns its description. With the
// invariants build tag it panics instead of returning.
func Broken(format string, args ...any) string {
	msg := fmt.Sprintf(format, args...)
	if Panics {
		panic("invariant broken: " + msg)
	}
	return msg
}
