//go:build !invariants

package invariant

// Panics is false without the invariants tag: Broken returns the message
// for the caller to report.
const Panics = false
