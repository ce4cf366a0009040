package logmove

// Resuming a move a restart interrupted. Kafka keeps a future log across a
// restart and its ReplicaAlterLogDirsThread fetches on from the future's
// end, truncating it first where the leader-epoch history says it
// diverges. Here the future log is kept too (storage.Open recovers its
// torn tail), and ResumeFrom decides, from what storage found of both logs,
// whether it is a prefix of the current log (continue the copy from its
// end), must be cut back to where they agree, or must start over.

// Batch identifies one stored batch.
type Batch struct {
	Base, Last int64
	Epoch      int32
	CRC        uint32
}

// EpochStart is a leader-epoch cache entry: Epoch wrote its first batch
// at Start.
type EpochStart struct {
	Epoch int32
	Start int64
}

// Kept is what storage found of a future log kept across a restart and of
// the current log it copies.
type Kept struct {
	SrcStart, SrcEnd int64
	SrcEpochs        []EpochStart
	// SrcAt is the current log's batch holding FutLast.Last (HasSrcAt:
	// there is one).
	SrcAt    Batch
	HasSrcAt bool

	FutStart, FutEnd int64
	FutEpochs        []EpochStart
	// FutLast is the future's last batch (HasFutLast: it holds one).
	FutLast    Batch
	HasFutLast bool
}

// ResumeFrom decides what to do with a kept future log before its copy goes
// on: Copy from Offset (the future's end: it is a prefix of the current
// log), Truncate it to Offset and ask again with what storage then finds,
// or Reset it to start over at the current log's start. A future that
// could differ from the current log is never kept: it must end with the
// very batch (offsets, leader epoch, CRC) the current log holds there,
// and both leader-epoch histories must agree up to its end.
func ResumeFrom(k Kept) Step {
	reset := Step{Kind: Reset, Offset: k.SrcStart}
	if !k.HasFutLast || k.FutEnd <= k.FutStart || k.FutLast.Last >= k.FutEnd || k.FutLast.Last < k.FutStart {
		// Nothing copied that could be kept (or a future that is not
		// what a copy makes).
		return reset
	}
	if k.FutStart > k.SrcStart || k.FutEnd <= k.SrcStart {
		// The current log starts below the future (a follower restarted
		// it lower), or retention moved it past all the future holds:
		// nothing of it can be checked against the current log.
		return reset
	}
	lo := max(k.FutStart, k.SrcStart)
	agree := agreedEnd(k.FutEpochs, k.SrcEpochs, lo, min(k.FutEnd, k.SrcEnd))
	if agree >= k.FutEnd {
		if k.HasSrcAt && k.SrcAt == k.FutLast {
			return Step{Kind: Copy, Offset: k.FutEnd}
		}
		// The histories agree but the last batch is not the current
		// log's (compacted since, or damage): nothing says where they
		// part.
		return reset
	}
	if agree <= lo {
		return reset
	}
	return Step{Kind: Truncate, Offset: agree}
}

// agreedEnd is the highest offset up to which (from lo, below hi) every
// offset the future has an epoch for has the same epoch in the current
// log: where, by the leader-epoch histories, the two logs part.
func agreedEnd(fut, src []EpochStart, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	// The offsets where either history changes, from lo on.
	at := lo
	for at < hi {
		fe, fNext := epochAt(fut, at)
		se, sNext := epochAt(src, at)
		if fe >= 0 && fe != se {
			return at
		}
		at = min(fNext, sNext, hi)
	}
	return hi
}

// epochAt is the epoch entries give offset (-1 for none) and the offset
// where the next entry starts (math.MaxInt64 for none).
func epochAt(entries []EpochStart, offset int64) (epoch int32, next int64) {
	epoch, next = -1, int64(1<<63-1)
	for _, e := range entries {
		if e.Start > offset {
			next = e.Start
			break
		}
		epoch = e.Epoch
	}
	return epoch, next
}
