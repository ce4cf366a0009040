package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// headerBytes encodes a request header v1 (key, version, correlation id,
// client id; a nil id is encoded as length -1).
func headerBytes(key, version int16, corr int32, clientID *string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if clientID == nil {
		return binary.BigEndian.AppendUint16(b, 0xFFFF)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
	return append(b, *clientID...)
}

// requestFrame encodes req as a frame body (no size prefix): header v1, or
// v2 with an empty tag section when the version is flexible.
func requestFrame(req kmsg.Request, corr int32, clientID string) []byte {
	b := headerBytes(req.Key(), req.GetVersion(), corr, &clientID)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

func TestParseHeader(t *testing.T) {
	id := "client-1"
	empty := ""
	tests := []struct {
		name     string
		frame    []byte
		want     RequestHeader
		wantRest []byte
		wantErr  error
	}{
		{"null client id", headerBytes(3, 12, 7, nil), RequestHeader{Key: 3, Version: 12, CorrelationID: 7}, []byte{}, nil},
		{"empty client id", headerBytes(0, 9, 1, &empty), RequestHeader{Key: 0, Version: 9, CorrelationID: 1}, []byte{}, nil},
		{"client id and body", append(headerBytes(18, 3, -5, &id), 0, 1, 2), RequestHeader{Key: 18, Version: 3, CorrelationID: -5, ClientID: id}, []byte{0, 1, 2}, nil},
		{"negative key and version are parsed, not judged", headerBytes(-1, -1, 0, nil), RequestHeader{Key: -1, Version: -1}, []byte{}, nil},
		// Any negative length other than -1 is not a valid nullable string;
		// it carries no bytes, so it is read as null rather than rejected.
		{"client id length -2", append(headerBytes(1, 4, 2, nil)[:8], 0xFF, 0xFE), RequestHeader{Key: 1, Version: 4, CorrelationID: 2}, []byte{}, nil},
		{"empty frame", nil, RequestHeader{}, nil, ErrTruncatedHeader},
		{"nine bytes", headerBytes(1, 4, 2, nil)[:9], RequestHeader{}, nil, ErrTruncatedHeader},
		{"client id longer than the frame", headerBytes(1, 4, 2, &id)[:12], RequestHeader{}, nil, ErrTruncatedHeader},
		{"client id length 32767 with nothing behind it", append(headerBytes(1, 4, 2, nil)[:8], 0x7F, 0xFF), RequestHeader{}, nil, ErrTruncatedHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, rest, err := ParseHeader(tt.frame)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if h != tt.want {
				t.Errorf("header = %+v, want %+v", h, tt.want)
			}
			if !bytes.Equal(rest, tt.wantRest) {
				t.Errorf("rest = %x, want %x", rest, tt.wantRest)
			}
		})
	}
}

// flexibleMetadata is a flexible Metadata request with one topic, used to
// check that header tags are skipped before the body.
func flexibleMetadata() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("orders")
	req.Topics = append(req.Topics, topic)
	return req
}

func TestDecodeBody(t *testing.T) {
	id := "c"
	meta := flexibleMetadata()
	metaBody := meta.AppendTo(nil)
	flexHeader := headerBytes(3, 12, 9, &id)
	withTags := func(tags ...byte) []byte {
		b := append(append([]byte{}, flexHeader...), tags...)
		return append(b, metaBody...)
	}
	old := kmsg.NewPtrMetadataRequest()
	old.SetVersion(4) // not flexible: no header tag section
	old.Topics = meta.Topics

	tests := []struct {
		name      string
		frame     []byte
		wantTopic string
		wantErr   error
	}{
		{"flexible, empty header tags", withTags(0), "orders", nil},
		{"flexible, two header tags are skipped", withTags(2, 0, 3, 'a', 'b', 'c', 5, 0), "orders", nil},
		{"flexible, missing tag section", append([]byte{}, flexHeader...), "", ErrTruncatedHeader},
		{"flexible, tag size past the end", withTags(1, 0, 0x7F), "", ErrTruncatedHeader},
		{"flexible, unterminated tag count varint", append(append([]byte{}, flexHeader...), 0x80), "", ErrTruncatedHeader},
		{"not flexible", requestFrame(old, 9, id), "orders", nil},
		{"body cut short", withTags(0)[:len(withTags(0))-3], "", ErrBadBody},
		{"unknown key", headerBytes(999, 0, 9, &id), "", ErrUnknownKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, rest, err := ParseHeader(tt.frame)
			if err != nil {
				t.Fatalf("ParseHeader: %v", err)
			}
			req, err := DecodeBody(h, rest)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if req != nil {
					t.Fatalf("error %v with a non-nil request", err)
				}
				return
			}
			m, ok := req.(*kmsg.MetadataRequest)
			if !ok {
				t.Fatalf("decoded %T, want *kmsg.MetadataRequest", req)
			}
			if m.GetVersion() != h.Version {
				t.Errorf("version = %d, want %d", m.GetVersion(), h.Version)
			}
			if len(m.Topics) != 1 || m.Topics[0].Topic == nil || *m.Topics[0].Topic != tt.wantTopic {
				t.Errorf("topics = %+v, want one named %q", m.Topics, tt.wantTopic)
			}
		})
	}
}

func TestAppendResponse(t *testing.T) {
	apiVersions := func(v int16) kmsg.Response {
		r := kmsg.NewPtrApiVersionsResponse()
		r.SetVersion(v)
		r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 3}}
		return r
	}
	metadata := func(v int16) kmsg.Response {
		r := kmsg.NewPtrMetadataResponse()
		r.SetVersion(v)
		return r
	}
	tests := []struct {
		name    string
		key     int16
		resp    kmsg.Response
		wantTag bool
	}{
		{"ApiVersions v0", 18, apiVersions(0), false},
		{"ApiVersions v3 is flexible but its header has no tags", 18, apiVersions(3), false},
		{"Metadata v8 is not flexible", 3, metadata(8), false},
		{"Metadata v9 is flexible: one empty tag section", 3, metadata(9), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := RequestHeader{Key: tt.key, Version: tt.resp.GetVersion(), CorrelationID: 0x01020304}
			existing := []byte("already buffered")
			out := AppendResponse(append([]byte{}, existing...), h, tt.resp)
			if !bytes.HasPrefix(out, existing) {
				t.Fatal("AppendResponse overwrote what dst already held")
			}
			frame := out[len(existing):]
			size := binary.BigEndian.Uint32(frame)
			if int(size) != len(frame)-4 {
				t.Fatalf("size prefix %d, frame holds %d bytes", size, len(frame)-4)
			}
			if corr := binary.BigEndian.Uint32(frame[4:]); corr != 0x01020304 {
				t.Fatalf("correlation id %#x", corr)
			}
			body := frame[8:]
			wantBody := tt.resp.AppendTo(nil)
			if tt.wantTag {
				if len(body) == 0 || body[0] != 0 {
					t.Fatalf("flexible response header lacks its empty tag section")
				}
				body = body[1:]
			}
			if !bytes.Equal(body, wantBody) {
				t.Fatalf("body after header = %x, want %x", body, wantBody)
			}
		})
	}
}

// TestAppendResponseApiVersionsErrorInV0 is the shape a client sends an
// unknown ApiVersions version and relies on: a v0 body it can parse, with
// UNSUPPORTED_VERSION and key 18's range.
func TestAppendResponseApiVersionsErrorInV0(t *testing.T) {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 3}}
	out := AppendResponse(nil, RequestHeader{Key: 18, Version: 99, CorrelationID: 5}, resp)
	back := kmsg.NewPtrApiVersionsResponse()
	back.SetVersion(0)
	if err := back.ReadFrom(out[8:]); err != nil {
		t.Fatalf("client cannot read the v0 answer: %v", err)
	}
	if back.ErrorCode != kerr.UnsupportedVersion.Code || len(back.ApiKeys) != 1 || back.ApiKeys[0].MaxVersion != 3 {
		t.Fatalf("answer = %+v", back)
	}
}
