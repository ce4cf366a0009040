package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersionsKey is special-cased by the protocol: its response header never
// carries tagged fields, and an unsupported version is answered in v0 format.
const ApiVersionsKey = 18

// RequestHeader is the parsed request header (v1, or v2 with tagged fields
// for flexible versions).
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      string
}

// Errors from ParseRequest.
var (
	ErrTruncatedHeader = errors.New("truncated request header")
	ErrUnknownKey      = errors.New("unknown API key")
	ErrBadBody         = errors.New("malformed request body")
)

// ParseHeader decodes the fixed part of a request header and returns the
// rest of the frame (tags and body).
func ParseHeader(frame []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(frame) < 10 {
		return h, nil, ErrTruncatedHeader
	}
	h.Key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	idLen := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	if idLen > 0 {
		if int(idLen) > len(rest) {
			return h, nil, ErrTruncatedHeader
		}
		h.ClientID = string(rest[:idLen])
		rest = rest[idLen:]
	}
	return h, rest, nil
}

// DecodeBody builds the kmsg request for the header's key and version and
// decodes the body into it. The caller has already checked that the version
// is one we serve (a kmsg type may not know versions newer than its own).
func DecodeBody(h RequestHeader, rest []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return nil, fmt.Errorf("%w %d", ErrUnknownKey, h.Key)
	}
	req.SetVersion(h.Version)
	if req.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return nil, err
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %v", ErrBadBody, kmsg.NameForKey(h.Key), h.Version, err)
	}
	return req, nil
}

// skipTags skips a tagged-field section: a count, then (tag, size, bytes)
// for each field. Header tags carry nothing we use.
func skipTags(b []byte) ([]byte, error) {
	n, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	for i := uint64(0); i < n; i++ {
		if _, b, err = uvarint(b); err != nil {
			return nil, err
		}
		var size uint64
		if size, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if size > uint64(len(b)) {
			return nil, ErrTruncatedHeader
		}
		b = b[size:]
	}
	return b, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, ErrTruncatedHeader
	}
	return v, b[n:], nil
}

// AppendResponse appends a complete size-prefixed response frame for the
// request header h. flexible says whether the response body version is
// flexible; the header then carries an empty tag section, except for
// ApiVersions whose response header is always v0.
func AppendResponse(dst []byte, h RequestHeader, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, filled below
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.CorrelationID))
	if resp.IsFlexible() && h.Key != ApiVersionsKey {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
