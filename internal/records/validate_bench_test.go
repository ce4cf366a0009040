package records

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
)

// BenchmarkProduceValidation measures what the produce path spends per
// ~1 MiB batch: "header" is the check the broker made before full
// validation (batch.Validate: sizes, CRC, counts), "full" is Validate,
// which also decodes every record. MB/s is over the batch as sent.
//
//	go test -run '^$' -bench ProduceValidation -benchmem ./internal/records/
func BenchmarkProduceValidation(b *testing.B) {
	codecs := []struct {
		name  string
		codec int
	}{{"none", batch.CompressionNone}, {"gzip", batch.CompressionGzip}, {"snappy", codecSnappyRaw}, {"lz4", batch.CompressionLZ4}, {"zstd", batch.CompressionZstd}}
	for _, size := range []int{1024, 100} {
		recs := benchRecords(size, 1<<20)
		for _, c := range codecs {
			bt := batchSpec{codec: c.codec, baseTimestamp: 1_700_000_000_000, records: recs}.build(b)
			name := fmt.Sprintf("%dB/%s", size, c.name)
			b.Run(name+"/header", func(b *testing.B) {
				b.SetBytes(int64(len(bt)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := batch.Validate(bt); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/full", func(b *testing.B) {
				b.SetBytes(int64(len(bt)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Validate(bt, lenient); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchRecords makes records of about size bytes (a short key, a value of
// words drawn from a small vocabulary, so that codecs compress it the way
// they compress text), total bytes in all.
func benchRecords(size, total int) []kmsg.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"skein ", "kafka ", "record ", "batch ", "offset ", "leader ", "replica ", "fetch "}
	var recs []kmsg.Record
	for i := 0; i*size < total; i++ {
		v := make([]byte, 0, size)
		for len(v) < size-16 {
			v = append(v, words[rng.IntN(len(words))]...)
		}
		v = fmt.Appendf(v, "%08d", rng.IntN(1e8))
		recs = append(recs, kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i), Key: fmt.Appendf(nil, "key-%d", i), Value: v})
	}
	return recs
}
