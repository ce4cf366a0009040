package storage

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// On-disk entry sizes, as in Kafka.
const (
	offsetIndexEntrySize = 8  // relative offset uint32, file position uint32
	timeIndexEntrySize   = 12 // timestamp int64, relative offset uint32
)

// offsetEntry maps the last offset of a batch (relative to the segment base)
// to the file position where that batch starts. Kafka indexes a batch by its
// last offset, so the floor entry of any target offset points at a batch
// that starts at or before the target's batch.
type offsetEntry struct {
	rel uint32
	pos uint32
}

// offsetIndex is a segment's sparse offset index, held in memory (it is
// about 0.2% of the log at the default interval) and written to the .index
// file when the segment is rolled or the log is closed.
type offsetIndex struct {
	entries []offsetEntry
}

func (x *offsetIndex) add(rel uint32, pos uint32) {
	x.entries = append(x.entries, offsetEntry{rel: rel, pos: pos})
}

// lookup returns the last entry whose offset is <= rel; ok is false when
// there is none (scan from the segment start).
func (x *offsetIndex) lookup(rel uint32) (e offsetEntry, ok bool) {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].rel > rel })
	if i == 0 {
		return offsetEntry{}, false
	}
	return x.entries[i-1], true
}

// truncate removes the entries for batches at or after position pos.
func (x *offsetIndex) truncate(pos int64) {
	i := sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].pos) >= pos })
	x.entries = x.entries[:i]
}

func (x *offsetIndex) isFull(maxIndexBytes int) bool {
	return (len(x.entries)+1)*offsetIndexEntrySize > maxIndexBytes
}

func (x *offsetIndex) encode() []byte {
	out := make([]byte, len(x.entries)*offsetIndexEntrySize)
	for i, e := range x.entries {
		binary.BigEndian.PutUint32(out[i*offsetIndexEntrySize:], e.rel)
		binary.BigEndian.PutUint32(out[i*offsetIndexEntrySize+4:], e.pos)
	}
	return out
}

// decodeOffsetIndex parses and checks an .index file against the segment it
// belongs to: entries strictly increasing in both columns, positions inside
// the log file, offsets inside the segment. Anything else (a torn write,
// a zero-filled preallocated tail, a stale file) is rejected so the caller
// rebuilds the index from the log.
func decodeOffsetIndex(data []byte, logSize int64, maxRel int64) (offsetIndex, error) {
	if len(data)%offsetIndexEntrySize != 0 {
		return offsetIndex{}, fmt.Errorf("offset index size %d is not a multiple of %d", len(data), offsetIndexEntrySize)
	}
	x := offsetIndex{entries: make([]offsetEntry, 0, len(data)/offsetIndexEntrySize)}
	for i := 0; i < len(data); i += offsetIndexEntrySize {
		e := offsetEntry{
			rel: binary.BigEndian.Uint32(data[i:]),
			pos: binary.BigEndian.Uint32(data[i+4:]),
		}
		if int64(e.pos) >= logSize || int64(e.rel) > maxRel {
			return offsetIndex{}, fmt.Errorf("offset index entry %d (offset +%d at %d) outside the segment", i/offsetIndexEntrySize, e.rel, e.pos)
		}
		if n := len(x.entries); n > 0 && (e.rel <= x.entries[n-1].rel || e.pos <= x.entries[n-1].pos) {
			return offsetIndex{}, fmt.Errorf("offset index entry %d (offset +%d at %d) not increasing", n, e.rel, e.pos)
		}
		x.entries = append(x.entries, e)
	}
	return x, nil
}

// timeEntry says that the batches up to the one ending at relative offset
// rel have timestamps <= ts, and ts is reached at rel.
type timeEntry struct {
	ts  int64
	rel uint32
}

// timeIndex is a segment's sparse time index; entries are added only when
// the segment's max timestamp grows, so timestamps strictly increase.
type timeIndex struct {
	entries []timeEntry
}

// maybeAdd appends an entry if ts is larger than the last one.
func (x *timeIndex) maybeAdd(ts int64, rel uint32) {
	if n := len(x.entries); n > 0 && ts <= x.entries[n-1].ts {
		return
	}
	x.entries = append(x.entries, timeEntry{ts: ts, rel: rel})
}

func (x *timeIndex) last() (timeEntry, bool) {
	if len(x.entries) == 0 {
		return timeEntry{}, false
	}
	return x.entries[len(x.entries)-1], true
}

// lastBelow returns the last entry with a timestamp < ts.
func (x *timeIndex) lastBelow(ts int64) (timeEntry, bool) {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].ts >= ts })
	if i == 0 {
		return timeEntry{}, false
	}
	return x.entries[i-1], true
}

// truncate removes entries that name offsets at or after rel.
func (x *timeIndex) truncate(rel uint32) {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].rel >= rel })
	x.entries = x.entries[:i]
}

func (x *timeIndex) isFull(maxIndexBytes int) bool {
	return (len(x.entries)+1)*timeIndexEntrySize > maxIndexBytes
}

func (x *timeIndex) encode() []byte {
	out := make([]byte, len(x.entries)*timeIndexEntrySize)
	for i, e := range x.entries {
		binary.BigEndian.PutUint64(out[i*timeIndexEntrySize:], uint64(e.ts))
		binary.BigEndian.PutUint32(out[i*timeIndexEntrySize+8:], e.rel)
	}
	return out
}

// decodeTimeIndex parses and checks a .timeindex file: timestamps strictly
// increasing, offsets non-decreasing and inside the segment.
func decodeTimeIndex(data []byte, maxRel int64) (timeIndex, error) {
	if len(data)%timeIndexEntrySize != 0 {
		return timeIndex{}, fmt.Errorf("time index size %d is not a multiple of %d", len(data), timeIndexEntrySize)
	}
	x := timeIndex{entries: make([]timeEntry, 0, len(data)/timeIndexEntrySize)}
	for i := 0; i < len(data); i += timeIndexEntrySize {
		e := timeEntry{
			ts:  int64(binary.BigEndian.Uint64(data[i:])),
			rel: binary.BigEndian.Uint32(data[i+8:]),
		}
		if int64(e.rel) > maxRel {
			return timeIndex{}, fmt.Errorf("time index entry %d (offset +%d) outside the segment", i/timeIndexEntrySize, e.rel)
		}
		if n := len(x.entries); n > 0 && (e.ts <= x.entries[n-1].ts || e.rel < x.entries[n-1].rel) {
			return timeIndex{}, fmt.Errorf("time index entry %d (%d at +%d) not increasing", n, e.ts, e.rel)
		}
		x.entries = append(x.entries, e)
	}
	return x, nil
}
