package sim

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/skein-log/skein/internal/metadata"
)

// The metadata quorum's entry format and snapshot contents. These mirror
// encodeEntry, decodeEntry and imageRecords in internal/node/metadata_quorum.go
// (node-private there); a simulated node must write the same bytes so that
// the same decode and apply code runs on them.

var barrierEntry = binary.AppendUvarint(nil, 0)

func encodeEntry(recs []metadata.Record) ([]byte, error) {
	out := binary.AppendUvarint(nil, uint64(len(recs)))
	for _, r := range recs {
		v, err := metadata.EncodeRecord(r)
		if err != nil {
			return nil, fmt.Errorf("encode metadata record: %w", err)
		}
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
	return out, nil
}

const maxRecordsPerEntry = 1 << 20

func decodeEntry(data []byte) ([]metadata.Record, error) {
	n, used := binary.Uvarint(data)
	if used <= 0 || n > maxRecordsPerEntry {
		return nil, errors.New("bad record count")
	}
	data = data[used:]
	recs := make([]metadata.Record, 0, min(n, 1024))
	for i := uint64(0); i < n; i++ {
		size, used := binary.Uvarint(data)
		if used <= 0 || size > uint64(len(data)-used) {
			return nil, fmt.Errorf("record %d truncated", i)
		}
		data = data[used:]
		r, err := metadata.DecodeRecord(data[:size])
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		recs = append(recs, r)
		data = data[size:]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%d bytes after the records", len(data))
	}
	return recs, nil
}

func imageRecords(im *metadata.Image) []metadata.Record {
	var recs []metadata.Record
	for _, br := range im.Brokers() {
		recs = append(recs, metadata.RegisterBroker{Broker: *br.Clone()})
	}
	for _, t := range im.Topics() {
		c := t.Clone()
		recs = append(recs, metadata.CreateTopic{Name: c.Name, ID: c.ID, Configs: c.Configs, Partitions: c.Partitions})
	}
	if next := im.NextProducerID(); next > 0 {
		recs = append(recs, metadata.AllocateProducerIDs{NextID: next})
	}
	return recs
}

// snapshotter lets quorum.Core snapshot and restore a process's image.
type snapshotter struct{ p *process }

func (s snapshotter) Snapshot() ([]byte, error) { return encodeEntry(imageRecords(s.p.image)) }

func (s snapshotter) Restore(data []byte) error {
	recs, err := decodeEntry(data)
	if err != nil {
		return fmt.Errorf("decode metadata snapshot: %w", err)
	}
	im, err := s.p.empty.Apply(recs...)
	if err != nil {
		return fmt.Errorf("apply metadata snapshot: %w", err)
	}
	s.p.setImage(im, "snapshot")
	return nil
}
