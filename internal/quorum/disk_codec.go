package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// ErrCorruptState means a persisted file or log entry failed its checks. The
// quorum refuses to start on it rather than vote or apply from bad state.
var ErrCorruptState = errors.New("corrupt quorum state")

// stateFileVersion opens every state file; a new layout gets a new number.
const stateFileVersion = 1

// stateFileHeader is the version byte plus a CRC-32C of the payload. The
// atomic rename already rules out torn files; the checksum catches bit rot
// and files written by something else.
const stateFileHeader = 1 + 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeStateFile wraps a protobuf message in the checksummed envelope.
func encodeStateFile(m proto.Message) ([]byte, error) {
	payload, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode state file: %w", err)
	}
	out := make([]byte, stateFileHeader, stateFileHeader+len(payload))
	out[0] = stateFileVersion
	binary.BigEndian.PutUint32(out[1:], crc32.Checksum(payload, castagnoli))
	return append(out, payload...), nil
}

// decodeStateFile checks the envelope and decodes its payload into m.
func decodeStateFile(name string, data []byte, m proto.Message) error {
	if len(data) < stateFileHeader {
		return fmt.Errorf("%w: %s: %d bytes, shorter than its header", ErrCorruptState, name, len(data))
	}
	if data[0] != stateFileVersion {
		return fmt.Errorf("%w: %s: unknown version %d", ErrCorruptState, name, data[0])
	}
	payload := data[stateFileHeader:]
	if want, got := binary.BigEndian.Uint32(data[1:]), crc32.Checksum(payload, castagnoli); want != got {
		return fmt.Errorf("%w: %s: checksum %08x, expected %08x", ErrCorruptState, name, got, want)
	}
	if err := proto.Unmarshal(payload, m); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorruptState, name, err)
	}
	return nil
}

// encodeEntryBatch makes the record batch that stores one Raft entry: one
// record whose value is the encoded entry (term, index, type and data), so
// the log alone says everything about it. The batch carries no leader epoch
// (-1): Raft terms are inside the entry, and the partition epoch cache has
// no use here.
func encodeEntryBatch(e *raftpb.Entry) ([]byte, error) {
	value, err := proto.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode entry %d: %w", e.GetIndex(), err)
	}
	// Timestamp 0: the quorum has no clock, and the log's time-based
	// settings (retention, segment.ms) are off for it.
	return batch.Build([][]byte{value}, 0), nil
}

// decodeEntryBatch reverses encodeEntryBatch and checks that the entry sits
// at the offset its index implies (offset = index - 1).
func decodeEntryBatch(b []byte) (*raftpb.Entry, error) {
	h, recs, err := records.Decode(b, len(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptState, err)
	}
	if len(recs) != 1 {
		return nil, fmt.Errorf("%w: batch at offset %d holds %d records, expected 1", ErrCorruptState, h.BaseOffset, len(recs))
	}
	e := &raftpb.Entry{}
	if err := proto.Unmarshal(recs[0].Value, e); err != nil {
		return nil, fmt.Errorf("%w: entry at offset %d: %v", ErrCorruptState, h.BaseOffset, err)
	}
	if e.GetIndex() != uint64(h.BaseOffset)+1 {
		return nil, fmt.Errorf("%w: offset %d holds entry index %d", ErrCorruptState, h.BaseOffset, e.GetIndex())
	}
	return e, nil
}
