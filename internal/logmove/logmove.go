// Package logmove decides the moves of a partition replica between the log
// directories of one broker (AlterReplicaLogDirs, KIP-113): when a
// request starts, replaces or cancels a move, what the copier does next,
// when the future log has caught up and may be swapped in, and what
// recovery does with the directories a crash left behind. It does no
// I/O, holds no lock and reads no clock: internal/storage copies and
// renames, internal/node runs the copier goroutine.
//
// A move, as in Kafka: the destination directory gets a "future" log
// <topic>-<partition>.<id>-future; the copier fills it from the current
// log (the same batches at the same offsets) and follows the appends
// that keep arriving; once it is close behind, appends are paused, the
// rest is copied, and the future log replaces the current one (storage
// Log.AdoptFuture). Until the swap is decided (a durable marker in the
// current log's directory) the current log is authoritative; a restart
// keeps the future log only as far as it is a prefix of the current log
// (ResumeFrom).
package logmove

// PauseLagOffsets bounds how far behind the future log may be when the
// copier pauses the partition's appends to finish: the copy done while
// paused is at most this many offsets (plus what one read returns), so a
// produce waits for a short copy, not a long one. Kafka's
// ReplicaAlterLogDirsThread swaps once its fetch reaches the log end; it
// too copies the last stretch under the partition's lock.
const PauseLagOffsets = 4096

// PauseLagBytes bounds the same stretch in bytes, so that a log of large
// records pauses its appends for a copy of a few MiB, not 4096 of them;
// the copier's throttle (replica.alter.log.dirs.io.max.bytes.per.second)
// then holds back nearly all of a move, the paused stretch not being held
// back.
const PauseLagBytes = 4 << 20

// Progress is what the copier sees of both logs.
type Progress struct {
	SrcStart, SrcEnd int64 // the current log's start and end offsets
	FutStart, FutEnd int64 // the future log's
	// Rewound is the lowest offset the current log was truncated to (or
	// restarted at) since the copier last asked; HasRewound says whether
	// it was at all. What the future copied at or above it may differ
	// from what the current log holds now.
	Rewound    int64
	HasRewound bool
	// Paused: the partition's appends are held (the caller holds the
	// partition's lock), so SrcEnd cannot move.
	Paused bool
	// BehindBytes estimates the bytes of the current log the future
	// lacks: the current log's size less the future's (retention and
	// compaction of the current log make it low, never high enough to
	// keep a move from ending).
	BehindBytes int64
	// MaxPausedOffsets and MaxPausedBytes bound the stretch copied while
	// paused (0: PauseLagOffsets and PauseLagBytes). The simulator scales
	// them down with its logs, as it does its timings, so that its moves
	// copy across appends, truncations and crashes before they pause.
	MaxPausedOffsets, MaxPausedBytes int64
}

// Kind is what the copier does next.
type Kind int

const (
	// Copy batches of the current log from Offset into the future log.
	Copy Kind = iota + 1
	// Truncate the future log to Offset.
	Truncate
	// Reset empties the future log and starts it at Offset.
	Reset
	// Pause the partition's appends (take its lock), then ask again.
	Pause
	// Release the pause: the future is further behind than a pause may
	// cover; copy without it.
	Release
	// Swap: the future log has everything; swap it in (still paused).
	Swap
)

func (k Kind) String() string {
	switch k {
	case Copy:
		return "copy"
	case Truncate:
		return "truncate"
	case Reset:
		return "reset"
	case Pause:
		return "pause"
	case Release:
		return "release"
	case Swap:
		return "swap"
	}
	return "unknown"
}

// Step is one decision of Next.
type Step struct {
	Kind   Kind
	Offset int64
}

// Next decides the copier's next step from both logs' positions.
func Next(p Progress) Step {
	if p.HasRewound && p.Rewound < p.FutEnd {
		// The current log lost (or replaced) what the future copied
		// from Rewound on: drop it there too.
		if p.Rewound <= p.FutStart || p.Rewound < p.SrcStart {
			return Step{Kind: Reset, Offset: p.SrcStart}
		}
		return Step{Kind: Truncate, Offset: p.Rewound}
	}
	if p.FutEnd < p.SrcStart {
		// Retention (or a restart of the current log) moved its start
		// past what the future holds: nothing in between can be read
		// any more, so the future starts over at the current start.
		return Step{Kind: Reset, Offset: p.SrcStart}
	}
	if p.FutStart > p.SrcStart {
		// The future lacks the head of the current log (it was reset
		// at a start the current log has since been lowered below: a
		// follower restarted lower). Start over to hold it all.
		return Step{Kind: Reset, Offset: p.SrcStart}
	}
	if p.FutEnd > p.SrcEnd {
		// Only after a truncation the copier has not heard of yet; the
		// rewound mark normally comes first.
		return Step{Kind: Truncate, Offset: p.SrcEnd}
	}
	lag := p.SrcEnd - p.FutEnd
	maxOffsets, maxBytes := int64(PauseLagOffsets), int64(PauseLagBytes)
	if p.MaxPausedOffsets > 0 {
		maxOffsets = p.MaxPausedOffsets
	}
	if p.MaxPausedBytes > 0 {
		maxBytes = p.MaxPausedBytes
	}
	near := lag <= maxOffsets && p.BehindBytes <= maxBytes
	if !p.Paused {
		if near {
			return Step{Kind: Pause}
		}
		return Step{Kind: Copy, Offset: p.FutEnd}
	}
	if !near {
		return Step{Kind: Release}
	}
	if lag == 0 {
		return Step{Kind: Swap}
	}
	return Step{Kind: Copy, Offset: p.FutEnd}
}
