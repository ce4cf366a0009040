package producer

import (
	"fmt"
	"math"
)

// DefaultIDBlockSize is how many producer ids one persisted reservation
// covers: one durable write per thousand InitProducerId calls.
const DefaultIDBlockSize = 1000

// IDBlock is a reservation of producer ids [Start, End).
type IDBlock struct {
	Start int64
	End   int64
}

// IDAllocator hands out increasing producer ids from reserved blocks. It is
// pure; the caller makes reservations durable. The protocol is:
//
//	id, ok := a.Next()
//	if !ok {
//		b, err := a.NextBlock()   // propose; a is unchanged
//		persist(b.End)            // durably, before any id of b is used
//		a.Grant(b)
//		id, _ = a.Next()
//	}
//
// After a restart, NewIDAllocator starts from the persisted end, so an id
// handed out before a crash is never handed out again (the unused rest of
// the old block is skipped, which is harmless).
type IDAllocator struct {
	next      int64
	end       int64
	blockSize int64
}

// NewIDAllocator starts from persistedEnd (0 on a brand-new broker) with no
// ids available until a block is granted.
func NewIDAllocator(persistedEnd, blockSize int64) (*IDAllocator, error) {
	if persistedEnd < 0 {
		return nil, fmt.Errorf("producer id allocator: persisted end %d is negative", persistedEnd)
	}
	if blockSize <= 0 {
		return nil, fmt.Errorf("producer id allocator: block size %d must be positive", blockSize)
	}
	return &IDAllocator{next: persistedEnd, end: persistedEnd, blockSize: blockSize}, nil
}

// Next returns the next producer id, or false when the granted block is used
// up and a new one must be reserved.
func (a *IDAllocator) Next() (int64, bool) {
	if a.next >= a.end {
		return 0, false
	}
	id := a.next
	a.next++
	return id, true
}

// Remaining is how many ids the granted block still holds.
func (a *IDAllocator) Remaining() int64 { return a.end - a.next }

// NextBlock proposes the block that follows the current reservation without
// changing the allocator; persist its End, then Grant it.
func (a *IDAllocator) NextBlock() (IDBlock, error) {
	if a.end > math.MaxInt64-a.blockSize {
		return IDBlock{}, fmt.Errorf("%w: next block would start at %d", ErrIDsExhausted, a.end)
	}
	return IDBlock{Start: a.end, End: a.end + a.blockSize}, nil
}

// Grant makes a persisted block available. It must be the block NextBlock
// proposed; any ids left in the previous block are abandoned.
func (a *IDAllocator) Grant(b IDBlock) error {
	if b.Start != a.end || b.End <= b.Start {
		return fmt.Errorf("producer id allocator: block [%d, %d) does not follow reservation end %d", b.Start, b.End, a.end)
	}
	a.next, a.end = b.Start, b.End
	return nil
}
