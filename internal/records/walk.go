package records

import "fmt"

// notKept stands for a non-null key or value that a validating pass
// skipped over instead of keeping: non-nil, so null stays distinguishable.
var notKept = []byte{}

// readRecord reads the next record of s. With keep, s must be a slice
// source and Key, Value and Headers alias it; without, only the deltas and
// whether key and value are null are kept, and nothing is allocated. Every
// length is checked against what is left of the record before it is used,
// so a record that lies about its fields cannot make the reader skip ahead
// or allocate by a count it does not hold.
func readRecord(s *source, keep bool) (Record, error) {
	var rec Record
	length, err := s.varint()
	if err != nil {
		return rec, fmt.Errorf("length: %w", err)
	}
	if length < minRecordSize-1 {
		return rec, fmt.Errorf("%w: record length %d", ErrCorrupt, length)
	}
	if !s.streaming() && int64(length) > int64(len(s.buf)-s.pos) {
		return rec, fmt.Errorf("%w: record length %d with %d bytes left", ErrCorrupt, length, len(s.buf)-s.pos)
	}
	end := s.offset() + int64(length)   // where the record must end
	if _, err := s.byte(); err != nil { // attributes: unused in v2
		return rec, err
	}
	if rec.TimestampDelta, err = s.varlong(); err != nil {
		return rec, fmt.Errorf("timestamp delta: %w", err)
	}
	if rec.OffsetDelta, err = s.varint(); err != nil {
		return rec, fmt.Errorf("offset delta: %w", err)
	}
	if rec.Key, err = readField(s, keep, end); err != nil {
		return rec, fmt.Errorf("key: %w", err)
	}
	if rec.Value, err = readField(s, keep, end); err != nil {
		return rec, fmt.Errorf("value: %w", err)
	}
	n, err := s.varint()
	if err != nil {
		return rec, fmt.Errorf("header count: %w", err)
	}
	if left := end - s.offset(); n < 0 || int64(n) > left/minHeaderSize {
		return rec, fmt.Errorf("%w: header count %d with %d bytes left in the record", ErrCorrupt, n, max(left, 0))
	}
	if keep && n > 0 {
		rec.Headers = make([]Header, n)
	}
	for i := range int(n) {
		key, err := readField(s, keep, end)
		if err != nil {
			return rec, fmt.Errorf("header %d key: %w", i, err)
		}
		if key == nil {
			return rec, fmt.Errorf("header %d: %w: null key", i, ErrCorrupt)
		}
		value, err := readField(s, keep, end)
		if err != nil {
			return rec, fmt.Errorf("header %d value: %w", i, err)
		}
		if keep {
			rec.Headers[i] = Header{Key: string(key), Value: value}
		}
	}
	if at := s.offset(); at != end {
		return rec, fmt.Errorf("%w: record of %d bytes holds %d", ErrCorrupt, length, at-(end-int64(length)))
	}
	return rec, nil
}

// readField reads a varint length (-1 = null) and that many bytes, which
// must lie inside the record, which ends at offset end.
func readField(s *source, keep bool, end int64) ([]byte, error) {
	n, err := s.varint()
	if err != nil {
		return nil, err
	}
	if n == -1 {
		return nil, nil
	}
	if left := end - s.offset(); n < 0 || int64(n) > left {
		return nil, fmt.Errorf("%w: length %d with %d bytes left in the record", ErrCorrupt, n, max(left, 0))
	}
	if keep {
		return s.take(int(n))
	}
	if err := s.skip(int64(n)); err != nil {
		return nil, err
	}
	return notKept, nil
}
