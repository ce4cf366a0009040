package storage

import (
	"errors"
	"fmt"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/logmove"
)

// maxResumeCuts bounds the truncations ResumeFuture makes before it starts
// the future over (each cuts it strictly, so this is only a backstop).
const maxResumeCuts = 64

// ResumeFuture readies fut, a future log of l that a restart left
// (RecoverMoves kept it; Open recovered its torn tail), for its copy to go
// on: logmove.ResumeFrom decides, from both logs as they are, whether fut
// is a prefix of l, must be cut back to where they agree (and asked
// again), or emptied to start over at l's start. It returns fut's end,
// where the copy goes on. The truncations and restarts of l before the
// call are taken (TakeRewound): fut is checked against l as it is now, and
// the copier hears of those that come after.
func (l *Log) ResumeFuture(fut *Log) (from int64, err error) {
	l.TakeRewound()
	for range maxResumeCuts {
		k, err := keptOf(l, fut)
		if err != nil {
			return 0, fmt.Errorf("resume %s: %w", fut.Dir(), err)
		}
		st := logmove.ResumeFrom(k)
		switch st.Kind {
		case logmove.Copy:
			return st.Offset, nil
		case logmove.Truncate:
			l.logger.Info("cutting a kept future log back to where it agrees with the current log", "dir", fut.Dir(), "end", k.FutEnd, "to", st.Offset)
			err = fut.Truncate(st.Offset)
		case logmove.Reset:
			return st.Offset, resetFuture(l, fut, k, st.Offset)
		default:
			err = fmt.Errorf("unexpected step %v", st.Kind)
		}
		if err != nil {
			return 0, fmt.Errorf("resume %s: %w", fut.Dir(), err)
		}
	}
	start := l.LogStartOffset()
	return start, resetFuture(l, fut, logmove.Kept{FutEnd: fut.LogEndOffset()}, start)
}

func resetFuture(l, fut *Log, k logmove.Kept, start int64) error {
	if k.FutEnd > k.FutStart {
		l.logger.Info("a kept future log does not match the current log; copying again from the start", "dir", fut.Dir(), "end", k.FutEnd)
	}
	if err := fut.TruncateFullyAndStartAt(start); err != nil {
		return fmt.Errorf("resume %s: %w", fut.Dir(), err)
	}
	return nil
}

// errScanned stops a scan that found what it looked for.
var errScanned = errors.New("scanned")

// keptOf is what logmove.ResumeFrom needs of src and its future fut.
func keptOf(src, fut *Log) (logmove.Kept, error) {
	k := logmove.Kept{
		SrcStart: src.LogStartOffset(), SrcEnd: src.LogEndOffset(), SrcEpochs: epochStarts(src),
		FutStart: fut.LogStartOffset(), FutEnd: fut.LogEndOffset(), FutEpochs: epochStarts(fut),
	}
	if k.FutEnd <= k.FutStart {
		return k, nil
	}
	// The future's last batch: the scan starts at the batch holding
	// FutEnd-1, or from the start when a compacted tail left none there.
	for _, from := range []int64{k.FutEnd - 1, k.FutStart} {
		err := fut.ScanHeaders(from, func(h batch.Header) error {
			k.FutLast, k.HasFutLast = batchOf(h), true
			return nil
		})
		if err != nil {
			return k, err
		}
		if k.HasFutLast {
			break
		}
	}
	if !k.HasFutLast || k.FutLast.Last < k.SrcStart || k.FutLast.Last >= k.SrcEnd {
		return k, nil
	}
	err := src.ScanHeaders(k.FutLast.Last, func(h batch.Header) error {
		if h.LastOffset() >= k.FutLast.Last {
			k.SrcAt, k.HasSrcAt = batchOf(h), true
			return errScanned
		}
		return nil
	})
	if err != nil && !errors.Is(err, errScanned) {
		return k, err
	}
	return k, nil
}

func batchOf(h batch.Header) logmove.Batch {
	return logmove.Batch{Base: h.BaseOffset, Last: h.LastOffset(), Epoch: h.LeaderEpoch, CRC: h.CRC}
}

func epochStarts(l *Log) []logmove.EpochStart {
	entries := l.Epochs().Entries()
	out := make([]logmove.EpochStart, len(entries))
	for i, e := range entries {
		out[i] = logmove.EpochStart{Epoch: e.Epoch, Start: e.StartOffset}
	}
	return out
}
