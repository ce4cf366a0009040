package wire

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/bufpool"
)

// Large response buffers (fetch responses carry up to fetch.max.bytes of
// records) come from the buffer pool (internal/bufpool) instead of being
// allocated for each response: a connection does not keep one (that would
// pin memory per idle connection), and a fresh one per response was half
// of the heap the fetch path allocated, plus its growth copies while
// encoding.
const (
	minPooledResponse = 1 << 20 // smaller responses use the connection's own buffer
	// responseSlack covers what a fetch response holds besides records:
	// headers, topic names, partition fields, aborted transactions.
	responseSlack = 64 << 10
)

// ResponseBuffer returns dst when it can hold resp, else a pooled
// buffer large enough for resp's records (a fetch response's), or dst
// when resp is small. Give it back with ReleaseResponseBuffer.
func ResponseBuffer(dst []byte, resp kmsg.Response) []byte {
	need := recordBytes(resp)
	if need == 0 {
		return dst[:0]
	}
	need += responseSlack
	if need <= cap(dst) || need < minPooledResponse {
		return dst[:0]
	}
	return bufpool.Get(need)[:0]
}

// ReleaseResponseBuffer takes back a buffer of at least 1 MiB once it is
// written, and returns the buffer a connection may keep: b when small,
// else nil.
func ReleaseResponseBuffer(b []byte) []byte {
	if cap(b) < minPooledResponse {
		return b
	}
	bufpool.Put(b)
	return nil
}

// recordBytes is the size of the records a response carries (a fetch
// response's record batches), 0 for other responses.
func recordBytes(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	return FetchRecordBytes(f)
}

// FetchRecordBytes is the size of the record batches a Fetch answer
// carries.
func FetchRecordBytes(f *kmsg.FetchResponse) int {
	n := 0
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			n += len(f.Topics[i].Partitions[j].RecordBatches)
		}
	}
	return n
}
