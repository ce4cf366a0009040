package api

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/records"
)

// maxKeyCheckBytes bounds the decompressed size of a batch opened to check
// its keys.
const maxKeyCheckBytes = 64 << 20

// checkKeysForCompaction refuses batches holding a record without a key:
// compaction keeps the latest record per key, so a keyless record has no
// place in a compacted topic. As in Kafka (whose rule covers every
// cleanup.policy that includes compact), the answer is INVALID_RECORD, or
// CORRUPT_MESSAGE for produce versions before 8, which predate that code.
func checkKeysForCompaction(batches [][]byte, version int16) error {
	code := kerr.InvalidRecord
	if version < 8 {
		code = kerr.CorruptMessage
	}
	for _, b := range batches {
		h, recs, err := records.Decode(b, maxKeyCheckBytes)
		if err != nil {
			return fmt.Errorf("%w: %v", code, err)
		}
		for _, r := range recs {
			if r.Key == nil {
				return fmt.Errorf("%w: compacted topic cannot accept a record without a key (offset delta %d of the batch with base sequence %d)", code, r.OffsetDelta, h.BaseSequence)
			}
		}
	}
	return nil
}
