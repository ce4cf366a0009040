package wire

import (
	"math/bits"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Large response buffers (fetch responses carry up to fetch.max.bytes of
// records) are pooled by power-of-two size class instead of being
// allocated for each response: a connection does not keep one (that would
// pin memory per idle connection), and a fresh one per response was half
// of the heap the fetch path allocated, plus its growth copies while
// encoding. Pooled buffers that stay unused are freed by the GC, as
// sync.Pool does.
const (
	minPooledShift = 20 // 1 MiB: smaller responses use the connection's own buffer
	maxPooledShift = 27 // 128 MiB: beyond, allocated and dropped
	// responseSlack covers what a fetch response holds besides records:
	// headers, topic names, partition fields, aborted transactions.
	responseSlack = 64 << 10
)

var encodePools [maxPooledShift - minPooledShift + 1]sync.Pool

// ResponseBuffer returns dst when it can hold resp, else a pooled
// buffer large enough for resp's records (a fetch response's), or dst
// when resp is small. Give it back with ReleaseResponseBuffer.
func ResponseBuffer(dst []byte, resp kmsg.Response) []byte {
	need := recordBytes(resp)
	if need == 0 {
		return dst[:0]
	}
	need += responseSlack
	if need <= cap(dst) || need < 1<<minPooledShift {
		return dst[:0]
	}
	class := max(bits.Len(uint(need-1)), minPooledShift)
	if class > maxPooledShift {
		return make([]byte, 0, need)
	}
	if b, ok := encodePools[class-minPooledShift].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, 1<<class)
}

// ReleaseResponseBuffer takes back a buffer of at least 1 MiB once it is
// written, and returns the buffer a connection may keep: b when small,
// else nil.
func ReleaseResponseBuffer(b []byte) []byte {
	if cap(b) < 1<<minPooledShift {
		return b
	}
	// Pool it in the largest class it fills, so a Get never returns a
	// buffer smaller than its class.
	class := bits.Len(uint(cap(b))) - 1
	if class <= maxPooledShift {
		b = b[:0]
		encodePools[class-minPooledShift].Put(&b)
	}
	return nil
}

// recordBytes is the size of the records a response carries (a fetch
// response's record batches), 0 for other responses.
func recordBytes(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 0
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			n += len(f.Topics[i].Partitions[j].RecordBatches)
		}
	}
	return n
}
