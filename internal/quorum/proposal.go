package quorum

import "encoding/binary"

// A Node wraps each proposal's data in a small envelope that tags it with
// the proposing process (a random incarnation) and a sequence number, so the
// proposer recognises its own entry when it is applied. The incarnation
// keeps entries replayed from an earlier run of the same node from matching
// a new proposal.
const (
	proposalVersion    = 1
	proposalHeaderSize = 1 + 8 + 8
)

// proposalTag identifies one proposal.
type proposalTag struct {
	incarnation uint64
	seq         uint64
}

func encodeProposal(tag proposalTag, data []byte) []byte {
	out := make([]byte, proposalHeaderSize, proposalHeaderSize+len(data))
	out[0] = proposalVersion
	binary.BigEndian.PutUint64(out[1:], tag.incarnation)
	binary.BigEndian.PutUint64(out[9:], tag.seq)
	return append(out, data...)
}

// decodeProposal splits an entry into its tag and the caller's data.
func decodeProposal(b []byte) (proposalTag, []byte, bool) {
	if len(b) < proposalHeaderSize || b[0] != proposalVersion {
		return proposalTag{}, nil, false
	}
	tag := proposalTag{incarnation: binary.BigEndian.Uint64(b[1:]), seq: binary.BigEndian.Uint64(b[9:])}
	return tag, b[proposalHeaderSize:], true
}
