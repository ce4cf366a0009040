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

// Frame versions: 0 carries the cluster id and the message; 1 (a dynamic
// quorum's) also the sender's controller endpoint, so that a node not yet
// in the configuration can answer the leader adding it. A static quorum
// sends version 0 only, as before dynamic membership existed.
const (
	raftMessageVersion       int16 = 0
	raftMessageVersionSender int16 = 1
)

// maxSenderAddrBytes bounds the sender endpoint in a version-1 frame.
const maxSenderAddrBytes = 512

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
	return AppendRaftFrameFrom(dst, clusterID, "", m)
}

// AppendRaftFrameFrom is AppendRaftFrame naming the sender's endpoint
// (host:port) in a version-1 frame; an empty sender makes version 0.
func AppendRaftFrameFrom(dst []byte, clusterID, sender string, m *raftpb.Message) ([]byte, error) {
	if len(clusterID) > maxClusterIDBytes {
		return dst, fmt.Errorf("%w: cluster id of %d bytes", ErrBadFrame, len(clusterID))
	}
	if len(sender) > maxSenderAddrBytes {
		return dst, fmt.Errorf("%w: sender endpoint of %d bytes", ErrBadFrame, len(sender))
	}
	version := raftMessageVersion
	if sender != "" {
		version = raftMessageVersionSender
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, filled in below
	dst = binary.BigEndian.AppendUint16(dst, uint16(RaftMessageKey))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	dst = binary.BigEndian.AppendUint32(dst, 0)      // correlation id: never answered
	dst = binary.BigEndian.AppendUint16(dst, 0xFFFF) // null client id
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clusterID)))
	dst = append(dst, clusterID...)
	if sender != "" {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(sender)))
		dst = append(dst, sender...)
	}
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
	clusterID, _, msg, err = DecodeRaftFrameFrom(body)
	return clusterID, msg, err
}

// DecodeRaftFrameFrom is DecodeRaftFrame also returning the sender's
// endpoint ("" in a version-0 frame).
func DecodeRaftFrameFrom(body []byte) (clusterID, sender string, msg *raftpb.Message, err error) {
	h, rest, err := wire.ParseHeader(body)
	if err != nil {
		return "", "", nil, fmt.Errorf("%w: %w", ErrBadFrame, err)
	}
	if h.Key != RaftMessageKey || (h.Version != raftMessageVersion && h.Version != raftMessageVersionSender) {
		return "", "", nil, fmt.Errorf("%w: api key %d version %d", ErrBadFrame, h.Key, h.Version)
	}
	clusterID, rest, err = cutShortString(rest, maxClusterIDBytes, "cluster id")
	if err != nil {
		return "", "", nil, err
	}
	if h.Version == raftMessageVersionSender {
		if sender, rest, err = cutShortString(rest, maxSenderAddrBytes, "sender endpoint"); err != nil {
			return "", "", nil, err
		}
	}
	msg = &raftpb.Message{}
	if err := proto.Unmarshal(rest, msg); err != nil {
		return "", "", nil, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	return clusterID, sender, msg, nil
}

// cutShortString reads a 2-byte-length string of at most limit bytes.
func cutShortString(b []byte, limit int, what string) (string, []byte, error) {
	if len(b) < 2 {
		return "", nil, fmt.Errorf("%w: no %s", ErrBadFrame, what)
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n > limit || n > len(b) {
		return "", nil, fmt.Errorf("%w: %s of %d bytes", ErrBadFrame, what, n)
	}
	return string(b[:n]), b[n:], nil
}

// HandleRaftFrame decodes a frame body, checks that it comes from this
// cluster and hands the message to step (Node.Step). The connection layer
// calls it for every frame with RaftMessageKey; on an error it should log
// and close the connection, since the peer is misconfigured or hostile.
func HandleRaftFrame(body []byte, clusterID string, step func(*raftpb.Message) error) error {
	return HandleRaftFrameFrom(body, clusterID, func(m *raftpb.Message, _ string) error { return step(m) })
}

// HandleRaftFrameFrom is HandleRaftFrame handing step the sender's
// endpoint too (Node.StepFrom).
func HandleRaftFrameFrom(body []byte, clusterID string, step func(m *raftpb.Message, sender string) error) error {
	got, sender, msg, err := DecodeRaftFrameFrom(body)
	if err != nil {
		return err
	}
	if got != clusterID {
		return &ClusterIDMismatchError{Theirs: got, Ours: clusterID, From: msg.GetFrom()}
	}
	return step(msg, sender)
}
