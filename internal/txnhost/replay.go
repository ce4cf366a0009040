package txnhost

import (
	"errors"
	"fmt"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/logreplay"
	"github.com/skein-log/skein/internal/records"
	"github.com/skein-log/skein/internal/txn"
)

// Loaded is a coordinator rebuilt from its partition's log.
type Loaded struct {
	Coordinator *txn.Coordinator
	// End is the log end offset the replay read to.
	End int64
	// Problems are records that could not be applied and were skipped.
	Problems []string
}

// Replay builds a coordinator from every record of the partition, in
// offset order. Records of other kinds (newer key versions) are skipped,
// and so is one unreadable record, which is reported: it must not keep
// every transactional id of the partition unavailable.
func Replay(cfg txn.Config, log logreplay.Log, name string) (Loaded, error) {
	l := Loaded{Coordinator: txn.New(cfg)}
	end, err := logreplay.Scan(log, name, func(h batch.Header, recs []records.Record) error {
		if h.IsControl() {
			return nil
		}
		for _, r := range recs {
			err := l.Coordinator.Apply(txn.Record{Key: r.Key, Value: r.Value})
			if err != nil && !errors.Is(err, txn.ErrNotTransactionRecord) {
				l.Problems = append(l.Problems, fmt.Sprintf("%s: skipping unreadable transaction record at %d: %v", name, r.Offset(h), err))
			}
		}
		return nil
	})
	if err != nil {
		return Loaded{}, err
	}
	l.End = end
	return l, nil
}
