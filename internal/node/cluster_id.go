package node

import (
	"fmt"
	"sync"
	"time"
)

// foreignCluster remembers that a peer belongs to another cluster. A node
// that disagrees with its peers on cluster.id can never join them, and
// every attempt is refused many times a second: the operator is told once,
// at error level, with both ids and what to do, and /readyz says why the
// node is not ready.
type foreignCluster struct {
	mu     sync.Mutex
	told   map[string]bool // peer cluster ids already logged
	reason string          // the latest mismatch, for /readyz
	at     time.Time       // when it was seen
}

// foreignClusterRecent is how long a mismatch explains not being ready:
// refusals repeat many times a second while it lasts, and a peer fixed
// and restarted should not be blamed for long.
const foreignClusterRecent = 10 * time.Second

// noteForeignCluster records that peer (a node, an address) is in cluster
// theirs while this node's cluster id is ours.
func (b *Broker) noteForeignCluster(peer, theirs, ours string) {
	reason := fmt.Sprintf("cluster id mismatch: %s is in cluster %q, this node's cluster.id is %q", peer, theirs, ours)
	if theirs == "" {
		reason = fmt.Sprintf("cluster id mismatch: %s refused this node's cluster.id %q (INCONSISTENT_CLUSTER_ID)", peer, ours)
	}
	fc := &b.foreign
	fc.mu.Lock()
	fc.reason, fc.at = reason, time.Now()
	first := !fc.told[theirs]
	if fc.told == nil {
		fc.told = map[string]bool{}
	}
	fc.told[theirs] = true
	fc.mu.Unlock()
	if first {
		b.log.Error("this node and its peers disagree on the cluster id; they will never form one cluster",
			"peer", peer, "peer_cluster_id", theirs, "cluster_id", ours,
			"fix", "give every node the same cluster.id; a log dir's meta.properties keeps the cluster id it was first started with, so a node meant to join this cluster needs empty log.dirs or its cluster.id set to the peers'")
	}
}

// foreignClusterReason is the last mismatch seen lately, "" if none.
func (b *Broker) foreignClusterReason() string {
	b.foreign.mu.Lock()
	defer b.foreign.mu.Unlock()
	if time.Since(b.foreign.at) > foreignClusterRecent {
		return ""
	}
	return b.foreign.reason
}
