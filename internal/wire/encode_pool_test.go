package wire

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func fetchResponse(recordBytes ...int) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	t := kmsg.NewFetchResponseTopic()
	for i, n := range recordBytes {
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = int32(i)
		p.RecordBatches = bytes.Repeat([]byte{byte(i + 1)}, n)
		t.Partitions = append(t.Partitions, p)
	}
	resp.Topics = append(resp.Topics, t)
	return resp
}

// A large fetch response is encoded into a buffer that holds it without
// growing, whichever pooled buffer comes back, and encodes the same bytes
// as a fresh one; small responses keep the connection's own buffer.
func TestResponseBufferHoldsTheResponse(t *testing.T) {
	own := make([]byte, 0, 4096)
	if b := ResponseBuffer(own, kmsg.NewPtrMetadataResponse()); cap(b) != cap(own) {
		t.Fatalf("metadata response: buffer cap %d, want the connection's %d", cap(b), cap(own))
	}
	if b := ResponseBuffer(own, fetchResponse(1000)); cap(b) != cap(own) {
		t.Fatalf("small fetch response: buffer cap %d, want the connection's", cap(b))
	}
	hdr := RequestHeader{Key: 1, Version: 13, CorrelationID: 3}
	for _, sizes := range [][]int{{1 << 20}, {700 << 10, 700 << 10, 700 << 10}, {3 << 20}, {1 << 20}, {5 << 20, 1}} {
		resp := fetchResponse(sizes...)
		want := AppendResponse(nil, hdr, resp)
		for range 3 { // fresh, then (probably) pooled buffers
			b := ResponseBuffer(own, resp)
			if cap(b) < len(want) {
				t.Fatalf("%v: buffer cap %d below the response's %d bytes", sizes, cap(b), len(want))
			}
			got := AppendResponse(b, hdr, resp)
			if !bytes.Equal(got, want) || &got[0] != &b[:1][0] {
				t.Fatalf("%v: encoded differently or into another buffer", sizes)
			}
			if kept := ReleaseResponseBuffer(got); kept != nil {
				t.Fatalf("%v: a %d-byte buffer stays with the connection", sizes, cap(got))
			}
		}
	}
	if kept := ReleaseResponseBuffer(own); cap(kept) != cap(own) {
		t.Fatal("a small buffer is not left to the connection")
	}
}
