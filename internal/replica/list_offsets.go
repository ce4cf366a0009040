package replica

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
	"github.com/skein-log/skein/internal/storage"
)

// MaxTimestampLookupBytes bounds the decompressed size of one stored batch
// opened to find a record by timestamp. The lookup reads through a window,
// so this bounds the work a lookup costs, not what it holds.
const MaxTimestampLookupBytes = 64 << 20

// ListOffset answers ListOffsets for one partition this broker leads, from
// its log, the bound hw and leader epoch the wrapper read (hw is the high
// watermark, or the last stable offset for a read_committed caller, as
// Kafka bounds lookups by what that caller may fetch): -1 is the bound
// (what a consumer can read up to), -2 the log start,
// -3 the record with the largest timestamp (KIP-734), and any other
// timestamp the first record at or after it, below the high watermark. It
// reads the log under the log's own lock only, so a wrapper calls it
// without holding its partition lock: a scan of large batches must not
// stall produces.
func ListOffset(log *storage.Log, ts, hw int64, epoch int32) (api.OffsetResult, error) {
	none := api.OffsetResult{Offset: -1, Timestamp: -1, LeaderEpoch: -1}
	switch ts {
	case -1:
		return api.OffsetResult{Offset: hw, Timestamp: -1, LeaderEpoch: epoch}, nil
	case -2:
		return api.OffsetResult{Offset: log.LogStartOffset(), Timestamp: -1, LeaderEpoch: epoch}, nil
	case -3:
		maxTs, off := log.MaxTimestamp()
		if off < 0 || off >= hw {
			return none, nil
		}
		return api.OffsetResult{Offset: off, Timestamp: maxTs, LeaderEpoch: epoch}, nil
	}
	if ts < 0 {
		return api.OffsetResult{}, fmt.Errorf("%w: timestamp %d", kerr.InvalidRequest, ts)
	}
	base, _, found, err := log.OffsetForTimestamp(ts)
	if err != nil {
		return none, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	// The index names the first batch whose max timestamp reaches ts; the
	// record itself may sit in a later batch (timestamps need not grow).
	for found && base < hw {
		data, err := log.Read(base, 1, hw, true)
		if err != nil || len(data) == 0 {
			return none, nil
		}
		var result *api.OffsetResult
		err = batch.Split(data, func(b []byte) error {
			h, off, rts, ok, err := records.FirstAtOrAfter(b, ts, MaxTimestampLookupBytes)
			if err != nil {
				return err
			}
			base = h.LastOffset() + 1
			if ok {
				result = &api.OffsetResult{Offset: off, Timestamp: rts, LeaderEpoch: epoch}
				return errStopScan
			}
			return nil
		})
		if result != nil {
			return *result, nil
		}
		if err != nil && !errors.Is(err, errStopScan) {
			return none, fmt.Errorf("%w: %v", kerr.CorruptMessage, err)
		}
	}
	return none, nil
}

var errStopScan = errors.New("stop")
