package records

import "encoding/binary"

// Append encodes one record in the v2 record format (see the package
// comment) and appends it to dst: what the log cleaner writes when it
// re-batches the records a compaction keeps. timestampDelta is relative to
// the base timestamp of the batch the record goes into.
func Append(dst []byte, r Record, timestampDelta int64) []byte {
	var body []byte
	body = append(body, 0) // attributes: unused in v2
	body = binary.AppendVarint(body, timestampDelta)
	body = binary.AppendVarint(body, int64(r.OffsetDelta))
	body = appendNullable(body, r.Key)
	body = appendNullable(body, r.Value)
	body = binary.AppendVarint(body, int64(len(r.Headers)))
	for _, h := range r.Headers {
		body = appendNullable(body, []byte(h.Key))
		body = appendNullable(body, h.Value)
	}
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...)
}

// appendNullable writes a varint length (-1 for nil) and the bytes.
func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}
