//go:build invariants

package invariant

// Panics is true in builds with the invariants tag: Broken panics.
const Panics = true
