package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Transaction markers (KIP-98): a control batch (attributes: control and
// transactional bits, never compressed) holding one control record. Its
// key is the control record key, version 0 and type; its value the
// EndTxnMarker, version 0 and the coordinator epoch. Kafka writes these on
// every partition of a transaction when it commits or aborts, and so does
// the partition leader here (replica.Replica.WriteTxnMarker).
const (
	ControlTypeAbort  int16 = 0
	ControlTypeCommit int16 = 1

	controlKeyVersion    int16 = 0
	endTxnMarkerVersion0 int16 = 0
	controlKeySize             = 4 // version, type
	endTxnMarkerSize           = 6 // version, coordinator epoch
)

// ErrBadControl reports a control batch whose record is not a transaction
// marker Skein can read.
var ErrBadControl = errors.New("control batch is not a readable transaction marker")

// Marker is a transaction marker's content.
type Marker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// BuildMarker makes the control batch that ends producerID's transaction at
// producerEpoch: a commit or an abort, written by the coordinator of
// coordinatorEpoch. Base offset 0; the log assigns the real one.
func BuildMarker(producerID int64, producerEpoch int16, m Marker, timestampMs int64) []byte {
	key := make([]byte, controlKeySize)
	binary.BigEndian.PutUint16(key, uint16(controlKeyVersion))
	typ := ControlTypeAbort
	if m.Commit {
		typ = ControlTypeCommit
	}
	binary.BigEndian.PutUint16(key[2:], uint16(typ))
	value := make([]byte, endTxnMarkerSize)
	binary.BigEndian.PutUint16(value, uint16(endTxnMarkerVersion0))
	binary.BigEndian.PutUint32(value[2:], uint32(m.CoordinatorEpoch))
	return assemble([]KeyValue{{Key: key, Value: value}}, timestampMs, TransactionalBit|ControlBit,
		producerID, producerEpoch, NoSequence)
}

// ParseMarker reads the transaction marker of control batch b (one whole
// batch, already validated). Kafka's readers take the type from the key
// and the coordinator epoch from the value; a key of a later version is
// read the same way (its first fields are fixed), as Kafka does.
func ParseMarker(b []byte) (Marker, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Marker{}, err
	}
	if !h.IsControl() || h.Compression() != CompressionNone || h.RecordCount < 1 || len(b) < h.Size() {
		return Marker{}, fmt.Errorf("%w: attributes %#x, %d records", ErrBadControl, h.Attributes, h.RecordCount)
	}
	rec := b[HeaderSize:h.Size()]
	key, value, err := firstRecordKeyValue(rec)
	if err != nil {
		return Marker{}, fmt.Errorf("%w: %w", ErrBadControl, err)
	}
	if len(key) < controlKeySize || int16(binary.BigEndian.Uint16(key)) < 0 {
		return Marker{}, fmt.Errorf("%w: key of %d bytes", ErrBadControl, len(key))
	}
	var m Marker
	switch typ := int16(binary.BigEndian.Uint16(key[2:])); typ {
	case ControlTypeAbort:
	case ControlTypeCommit:
		m.Commit = true
	default:
		return Marker{}, fmt.Errorf("%w: control type %d", ErrBadControl, typ)
	}
	if len(value) < endTxnMarkerSize {
		return Marker{}, fmt.Errorf("%w: marker value of %d bytes", ErrBadControl, len(value))
	}
	m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(value[2:]))
	return m, nil
}

// firstRecordKeyValue decodes the key and value of the first record of an
// uncompressed records section (length, attributes, timestamp delta,
// offset delta, key, value as varints and bytes).
func firstRecordKeyValue(b []byte) (key, value []byte, err error) {
	pos := 0
	varint := func() (int64, error) {
		v, n := binary.Varint(b[pos:])
		if n <= 0 {
			return 0, ErrTruncated
		}
		pos += n
		return v, nil
	}
	length, err := varint()
	if err != nil {
		return nil, nil, err
	}
	if length < 0 || int64(len(b)-pos) < length {
		return nil, nil, ErrTruncated
	}
	b = b[:pos+int(length)]
	if pos >= len(b) {
		return nil, nil, ErrTruncated
	}
	pos++         // attributes
	for range 2 { // timestamp delta, offset delta
		if _, err := varint(); err != nil {
			return nil, nil, err
		}
	}
	field := func() ([]byte, error) {
		n, err := varint()
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		if int64(len(b)-pos) < n {
			return nil, ErrTruncated
		}
		f := b[pos : pos+int(n)]
		pos += int(n)
		return f, nil
	}
	if key, err = field(); err != nil {
		return nil, nil, err
	}
	if value, err = field(); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}
