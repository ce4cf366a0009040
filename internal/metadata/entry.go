package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A metadata log entry is a count, then that many length-prefixed encoded
// records; a barrier entry holds none. Snapshots use the same format with
// the records of ImageRecords. internal/node and internal/sim both write
// and read it, so one definition keeps their bytes identical.

// BarrierEntry is an entry of zero records: a new quorum leader commits one
// to learn that everything before it is applied.
var BarrierEntry = binary.AppendUvarint(nil, 0)

// maxRecordsPerEntry bounds decoding of a corrupt count.
const maxRecordsPerEntry = 1 << 20

// EncodeEntry encodes records as one metadata log entry.
func EncodeEntry(recs []Record) ([]byte, error) {
	out := binary.AppendUvarint(nil, uint64(len(recs)))
	for _, r := range recs {
		v, err := EncodeRecord(r)
		if err != nil {
			return nil, fmt.Errorf("encode metadata record: %w", err)
		}
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
	return out, nil
}

// DecodeEntry decodes one metadata log entry.
func DecodeEntry(data []byte) ([]Record, error) {
	n, used := binary.Uvarint(data)
	if used <= 0 || n > maxRecordsPerEntry {
		return nil, errors.New("bad record count")
	}
	data = data[used:]
	recs := make([]Record, 0, min(n, 1024))
	for i := uint64(0); i < n; i++ {
		size, used := binary.Uvarint(data)
		if used <= 0 || size > uint64(len(data)-used) {
			return nil, fmt.Errorf("record %d truncated", i)
		}
		data = data[used:]
		r, err := DecodeRecord(data[:size])
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

// ImageRecords are records that rebuild im from an empty image: the
// contents of a metadata snapshot.
func ImageRecords(im *Image) []Record {
	var recs []Record
	for _, br := range im.Brokers() {
		recs = append(recs, RegisterBroker{Broker: *br.Clone()})
	}
	for _, t := range im.Topics() {
		c := t.Clone()
		recs = append(recs, CreateTopic{Name: c.Name, ID: c.ID, Configs: c.Configs, Partitions: c.Partitions})
	}
	if next := im.NextProducerID(); next > 0 {
		recs = append(recs, AllocateProducerIDs{NextID: next})
	}
	recs = append(recs, aclImageRecords(im)...)
	recs = append(recs, scramImageRecords(im)...)
	recs = append(recs, clientQuotaRecords(im)...)
	recs = append(recs, featureImageRecords(im)...)
	recs = append(recs, brokerConfigRecords(im)...)
	return recs
}

// EncodeSnapshot is a metadata snapshot of im: ImageRecords as one entry.
func EncodeSnapshot(im *Image) ([]byte, error) { return EncodeEntry(ImageRecords(im)) }

// RestoreSnapshot rebuilds the image a snapshot taken at log index holds,
// from empty (the image with the node's own settings). The image's version
// is the snapshot's index, as each applied entry sets it to its own: a
// broker reports it to the controller as its metadata offset, and a fenced
// broker is unfenced only once that offset reaches its registration. Left
// at the count of snapshot records, it stayed fenced until the next entry
// was committed, forever in a quiet cluster (found by the simulator, seed
// 160 with -sim.duration=60s).
func RestoreSnapshot(empty *Image, index uint64, data []byte) (*Image, error) {
	recs, err := DecodeEntry(data)
	if err != nil {
		return nil, fmt.Errorf("decode metadata snapshot: %w", err)
	}
	im, err := empty.Apply(recs...)
	if err != nil {
		return nil, fmt.Errorf("apply metadata snapshot: %w", err)
	}
	return im.WithVersion(int64(index)), nil
}
