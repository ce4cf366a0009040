// Package controller makes the cluster's metadata decisions: topic creation
// and deletion, partition placement, config changes, broker fencing, leader
// elections and ISR changes.
//
// It is pure: every function reads an immutable metadata.Image and returns
// either metadata records describing the change or an *Error carrying the
// Kafka error code to answer with. It never applies the records itself; the
// caller appends them to the metadata log (later: proposes them to the Raft
// quorum) and every broker applies them in log order with Image.Apply. That
// split is what lets the same decisions run unchanged in a single broker, a
// Raft-replicated controller and the deterministic simulator.
package controller
