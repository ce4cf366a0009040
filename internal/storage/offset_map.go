package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
)

// OffsetMap is the log cleaner's key -> latest offset map, with a fixed
// memory budget like Kafka's (log.cleaner.dedupe.buffer.size): keys are
// stored as 16-byte hashes in an open-addressing table of 24-byte slots
// (hash, offset). A hash collision could only make the cleaner treat two
// keys as one; SHA-256 makes that practically impossible, also for keys
// chosen by an attacker.
//
// The table is allocated on first use, sized to the pass at hand, and kept
// for later passes; it is not safe for concurrent use.
type OffsetMap struct {
	maxSlots int
	slots    []byte // len = cap*slotSize; an all-zero hash marks a free slot
	used     int
}

const (
	hashSize       = 16
	slotSize       = hashSize + 8
	mapLoadFactor  = 0.9 // Kafka's log.cleaner.io.buffer.load.factor
	minOffsetSlots = 1 << 10
)

// NewOffsetMap returns a map that may use up to bufferBytes of memory.
func NewOffsetMap(bufferBytes int64) *OffsetMap {
	slots := max(int(min(bufferBytes, 1<<40)/slotSize), 16)
	return &OffsetMap{maxSlots: slots}
}

// MaxEntries is how many distinct keys the map can hold at most.
func (m *OffsetMap) MaxEntries() int { return int(float64(m.maxSlots) * mapLoadFactor) }

// reset empties the map and sizes it for up to entries keys (capped by the
// budget).
func (m *OffsetMap) reset(entries int) {
	want := min(max(int(float64(entries)/mapLoadFactor)+1, minOffsetSlots), m.maxSlots)
	want = min(1<<bits.Len(uint(want-1)), m.maxSlots) // a power of two unless capped
	if len(m.slots) != want*slotSize {
		m.slots = make([]byte, want*slotSize)
	} else {
		clear(m.slots)
	}
	m.used = 0
}

func (m *OffsetMap) capacity() int { return len(m.slots) / slotSize }

// full reports whether another key might not fit.
func (m *OffsetMap) full() bool {
	return float64(m.used+1) > float64(m.capacity())*mapLoadFactor
}

func hashKey(key []byte) [hashSize]byte {
	sum := sha256.Sum256(key)
	var h [hashSize]byte
	copy(h[:], sum[:hashSize])
	if h == ([hashSize]byte{}) {
		h[0] = 1 // all zeros marks a free slot
	}
	return h
}

// find returns the slot holding h, or the free slot where it would go.
func (m *OffsetMap) find(h *[hashSize]byte) (slot int, found bool) {
	n := m.capacity()
	i := int(binary.BigEndian.Uint64(h[:8]) % uint64(n))
	for {
		s := m.slots[i*slotSize : i*slotSize+hashSize]
		if [hashSize]byte(s) == *h {
			return i, true
		}
		if [hashSize]byte(s) == ([hashSize]byte{}) {
			return i, false
		}
		i = (i + 1) % n
	}
}

// put records offset as the latest for key. It returns false, changing
// nothing, when the key is new and the map is full.
func (m *OffsetMap) put(key []byte, offset int64) bool {
	h := hashKey(key)
	i, found := m.find(&h)
	if !found {
		if m.full() {
			return false
		}
		copy(m.slots[i*slotSize:], h[:])
		m.used++
	}
	binary.BigEndian.PutUint64(m.slots[i*slotSize+hashSize:], uint64(offset))
	return true
}

// get returns the latest offset recorded for key.
func (m *OffsetMap) get(key []byte) (int64, bool) {
	if m.capacity() == 0 {
		return 0, false
	}
	h := hashKey(key)
	i, found := m.find(&h)
	if !found {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(m.slots[i*slotSize+hashSize:])), true
}
