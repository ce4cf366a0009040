package quorum

// RaftID maps a Kafka node id to its Raft id. Raft uses 0 for "nobody", and
// node ids start at 0, so the mapping shifts by one.
func RaftID(nodeID int32) uint64 { return uint64(nodeID) + 1 }

// NodeID maps a Raft id back to a Kafka node id; Raft's 0 ("no leader")
// becomes -1, Kafka's "unknown" node id.
func NodeID(raftID uint64) int32 {
	if raftID == 0 {
		return -1
	}
	return int32(raftID - 1)
}
