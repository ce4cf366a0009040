package records

import (
	"encoding/binary"
	"fmt"
	"math"
)

// reader consumes fields from the front of b; every read checks bounds.
type reader struct{ b []byte }

func (r *reader) int8() (int8, error) {
	if len(r.b) < 1 {
		return 0, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	v := int8(r.b[0])
	r.b = r.b[1:]
	return v, nil
}

// varlong reads a zigzag varint of at most 10 bytes.
func (r *reader) varlong() (int64, error) {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint", ErrCorrupt)
	}
	r.b = r.b[n:]
	return v, nil
}

// varint reads a zigzag varint that must fit an int32.
func (r *reader) varint() (int32, error) {
	v, err := r.varlong()
	if err != nil {
		return 0, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%w: varint %d overflows int32", ErrCorrupt, v)
	}
	return int32(v), nil
}

// nullableBytes reads a varint length (-1 = null) and that many bytes. The
// result aliases the input; an empty non-null field is a non-nil empty slice.
func (r *reader) nullableBytes() ([]byte, error) {
	n, err := r.varint()
	if err != nil {
		return nil, err
	}
	if n == -1 {
		return nil, nil
	}
	if n < 0 || int(n) > len(r.b) {
		return nil, fmt.Errorf("%w: length %d with %d bytes left", ErrCorrupt, n, len(r.b))
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v, nil
}

// lengthPrefixed reads a non-null varint-length-prefixed field.
func (r *reader) lengthPrefixed() ([]byte, error) {
	v, err := r.nullableBytes()
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%w: negative record length", ErrCorrupt)
	}
	return v, nil
}
