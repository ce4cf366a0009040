package api_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/wire"
)

// encodeRequest encodes req as a frame body the way a client does: request
// header v1, or v2 (with an empty tag section) for flexible versions.
func encodeRequest(req kmsg.Request, corr int32, clientID string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// servedRequests returns one default-valued request for every key and
// version the registry serves: the seeds that let the fuzzer start from
// each body layout we accept.
func servedRequests() []kmsg.Request {
	var out []kmsg.Request
	for _, sp := range api.Specs() {
		for v := sp.MinVersion; v <= sp.MaxVersion; v++ {
			req := kmsg.RequestForKey(sp.Key)
			req.SetVersion(v)
			out = append(out, req)
		}
	}
	return out
}

// TestServedVersionsDecode checks that every advertised key and version
// round-trips through ParseHeader and DecodeBody: what ApiVersions offers,
// the connection layer can read.
func TestServedVersionsDecode(t *testing.T) {
	for _, req := range servedRequests() {
		frame := encodeRequest(req, 42, "seed")
		h, rest, err := wire.ParseHeader(frame)
		if err != nil {
			t.Fatalf("%s v%d: header: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
		}
		got, err := wire.DecodeBody(h, rest)
		if err != nil {
			t.Fatalf("%s v%d: body: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
		}
		if !bytes.Equal(got.AppendTo(nil), req.AppendTo(nil)) {
			t.Fatalf("%s v%d: decoded request re-encodes differently", kmsg.NameForKey(req.Key()), req.GetVersion())
		}
	}
}

// FuzzParseRequest feeds arbitrary frame bodies through the same steps as
// the connection layer (header, registry and version check, body decode).
// Nothing may panic, and a body that decodes must re-encode to bytes that
// decode to the same encoding again (the codec agrees with itself).
func FuzzParseRequest(f *testing.F) {
	for _, req := range servedRequests() {
		f.Add(encodeRequest(req, 1, "fuzz"))
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks = -1
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = []byte{0, 1, 2, 3}
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	f.Add(encodeRequest(produce, 2, ""))
	f.Add([]byte{0, 18, 0, 99, 0, 0, 0, 1, 0xFF, 0xFF}) // ApiVersions v99

	f.Fuzz(func(t *testing.T, frame []byte) {
		h, rest, err := wire.ParseHeader(frame)
		if err != nil {
			return
		}
		spec, ok := api.Lookup(h.Key)
		if !ok || h.Version < spec.MinVersion || h.Version > spec.MaxVersion {
			return // the connection layer closes (or answers ApiVersions in v0) here
		}
		req, err := wire.DecodeBody(h, rest)
		if err != nil {
			return
		}
		if req.Key() != h.Key || req.GetVersion() != h.Version {
			t.Fatalf("decoded key %d v%d from header key %d v%d", req.Key(), req.GetVersion(), h.Key, h.Version)
		}
		first := req.AppendTo(nil)
		again := kmsg.RequestForKey(h.Key)
		again.SetVersion(h.Version)
		if err := again.ReadFrom(first); err != nil {
			t.Fatalf("%s v%d: re-encoded request does not decode: %v", kmsg.NameForKey(h.Key), h.Version, err)
		}
		// Unknown tagged fields live in a map; compare lengths only when
		// the request has flexible versions, whose tag order may differ.
		second := again.AppendTo(nil)
		if req.IsFlexible() {
			if len(first) != len(second) {
				t.Fatalf("%s v%d: re-encoding changed size %d -> %d", kmsg.NameForKey(h.Key), h.Version, len(first), len(second))
			}
			return
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("%s v%d: re-encoding is not stable", kmsg.NameForKey(h.Key), h.Version)
		}
	})
}
