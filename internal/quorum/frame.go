package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/skein-log/skein/internal/wire"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// RaftMessageKey is the request api key of a Raft message frame. Kafka's keys
// stay far below it, so the controller listener routes frames with this key
// to the quorum instead of the Kafka API table.
const RaftMessageKey int16 = 1000

// raftMessageVersion is the only frame version so far.
const raftMessageVersion int16 = 0

// DefaultMaxFrameBytes bounds one Raft frame (a snapshot travels in one
// frame), matching socket.request.max.bytes' default.
const DefaultMaxFrameBytes = wire.DefaultMaxFrameBytes

// maxClusterIDBytes bounds the cluster id in a frame (Kafka's are 22
// characters).
const maxClusterIDBytes = 255

// Errors from DecodeRaftFrame and HandleRaftFrame.
var (
	ErrBadFrame          = errors.New("malformed raft frame")
	ErrClusterIDMismatch = errors.New("raft frame from another cluster")
)

// ClusterIDMismatchError is a frame refused for its cluster id; it names
// both ids, so the node can tell its operator which nodes disagree.
type ClusterIDMismatchError struct {
	Theirs, Ours string
	From         uint64 // the sender's raft id
}

func (e *ClusterIDMismatchError) Error() string {
	return fmt.Sprintf("%v: frame says cluster %q, this node is in %q (from raft id %d)", ErrClusterIDMismatch, e.Theirs, e.Ours, e.From)
}

func (e *ClusterIDMismatchError) Unwrap() error { return ErrClusterIDMismatch }

// AppendRaftFrame appends one complete frame carrying m: the 4-byte size,
// a request header (api key RaftMessageKey, version 0, correlation id 0,
// null client id), the cluster id as a Kafka string, and the protobuf
// message filling the rest. Raft frames are one-way: nothing answers them.
func AppendRaftFrame(dst []byte, clusterID string, m *raftpb.Message) ([]byte, error) {
	if len(clusterID) > maxClusterIDBytes {
		return dst, fmt.Errorf("%w: cluster id of %d bytes", ErrBadFrame, len(clusterID))
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, filled in below
	dst = binary.BigEndian.AppendUint16(dst, uint16(RaftMessageKey))
	dst = binary.BigEndian.AppendUint16(dst, uint16(raftMessageVersion))
	dst = binary.BigEndian.AppendUint32(dst, 0)      // correlation id: never answered
	dst = binary.BigEndian.AppendUint16(dst, 0xFFFF) // null client id
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clusterID)))
	dst = append(dst, clusterID...)
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		return dst[:start], fmt.Errorf("encode raft %s: %w", m.GetType(), err)
	}
	size := len(dst) - start - 4
	if size > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: raft %s of %d bytes", ErrBadFrame, m.GetType(), size)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(size))
	return dst, nil
}

// DecodeRaftFrame decodes a frame's body (everything after the size). It
// never panics on garbage; the caller bounds the size when reading.
func DecodeRaftFrame(body []byte) (clusterID string, msg *raftpb.Message, err error) {
	h, rest, err := wire.ParseHeader(body)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrBadFrame, err)
	}
	if h.Key != RaftMessageKey || h.Version != raftMessageVersion {
		return "", nil, fmt.Errorf("%w: api key %d version %d", ErrBadFrame, h.Key, h.Version)
	}
	if len(rest) < 2 {
		return "", nil, fmt.Errorf("%w: no cluster id", ErrBadFrame)
	}
	n := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if n > maxClusterIDBytes || n > len(rest) {
		return "", nil, fmt.Errorf("%w: cluster id of %d bytes", ErrBadFrame, n)
	}
	clusterID, rest = string(rest[:n]), rest[n:]
	msg = &raftpb.Message{}
	if err := proto.Unmarshal(rest, msg); err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	return clusterID, msg, nil
}

// HandleRaftFrame decodes a frame body, checks that it comes from this
// cluster and hands the message to step (Node.Step). The connection layer
// calls it for every frame with RaftMessageKey; on an error it should log
// and close the connection, since the peer is misconfigured or hostile.
func HandleRaftFrame(body []byte, clusterID string, step func(*raftpb.Message) error) error {
	got, msg, err := DecodeRaftFrame(body)
	if err != nil {
		return err
	}
	if got != clusterID {
		return &ClusterIDMismatchError{Theirs: got, Ours: clusterID, From: msg.GetFrom()}
	}
	return step(msg)
}
