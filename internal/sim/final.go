package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/records"
)

// logEntry is one record of a converged log. Logs start at offset 0 in
// the simulation (runs are far shorter than retention), so a record's
// index in readAll's answer is its offset.
type logEntry struct {
	value string
	epoch int32
}

func readAll(r *replica, upTo int64) ([]logEntry, error) {
	var out []logEntry
	err := scanBatches(r, upTo, func(h batch.Header, recs []records.Record) {
		for _, rec := range recs {
			out = append(out, logEntry{string(rec.Value), h.LeaderEpoch})
		}
	})
	return out, err
}

// scanBatches hands every batch of a replica's log below upTo to fn, in
// offset order, checking that offsets are contiguous.
func scanBatches(r *replica, upTo int64, fn func(h batch.Header, recs []records.Record)) error {
	next := r.log.LogStartOffset()
	for next < upTo {
		data, err := r.log.Read(next, 1<<20, upTo, true)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return fmt.Errorf("empty read at %d below %d", next, upTo)
		}
		err = batch.Split(data, func(b []byte) error {
			h, recs, err := records.Decode(b, 1<<20)
			if err != nil {
				return err
			}
			if h.BaseOffset != next {
				return fmt.Errorf("batch at %d follows offset %d: offsets not contiguous", h.BaseOffset, next-1)
			}
			fn(h, recs)
			next = h.LastOffset() + 1
			return nil
		})
		if err != nil && !errors.Is(err, batch.ErrTruncated) {
			return err
		}
	}
	return nil
}

// final checks the converged logs against everything that was
// acknowledged and read.
func (k *checker) final() {
	c := k.c
	if !k.finalMembership() {
		return
	}
	if c.opts.LogDirs > 1 {
		k.finalLogDirs()
	}
	for _, id := range slices.Sorted(maps.Keys(c.nodes)) {
		n := c.nodes[id]
		if n.proc == nil {
			continue
		}
		for _, key := range slices.SortedFunc(maps.Keys(n.proc.parts), comparePartKeys) {
			c.checkOpenTransactions(n, n.proc.parts[key])
		}
	}
	ctl := c.activeController()
	for _, t := range ctl.image.Topics() {
		for _, st := range t.Partitions {
			if _, ok := c.sameBelowHW(t, st); !ok {
				return
			}
		}
	}
	if !k.finalGroupCheck(ctl) || !k.finalTxnCheck(ctl) || !k.finalTxnAtomicCheck(ctl) || !k.finalChainCheck(ctl) {
		return
	}
	t, _ := ctl.image.Topic(topicName)
	strict := k.strict()
	refs := map[int32][]logEntry{}
	for _, st := range t.Partitions {
		ref, _ := c.sameBelowHW(t, st)
		refs[st.Index] = ref
		seen := map[string]int64{}
		for off, e := range ref {
			if prev, dup := seen[e.value]; dup {
				if r := k.values[e.value]; r != nil && r.spec.Idempotent {
					c.violation("partition %d: idempotent record %s at offsets %d and %d", st.Index, e.value, prev, off)
					return
				}
			}
			seen[e.value] = int64(off)
		}
		if !strict {
			continue
		}
		read := k.read[st.Index]
		for _, off := range slices.Sorted(maps.Keys(read)) {
			v := read[off]
			if off >= int64(len(ref)) || ref[off].value != v {
				got := "nothing"
				if off < int64(len(ref)) {
					got = fmt.Sprintf("%q", ref[off].value)
				}
				c.violation("partition %d offset %d was read as %q and now holds %s (a read record was truncated)", st.Index, off, v, got)
				return
			}
		}
	}
	for _, r := range k.order {
		if !r.acked {
			k.stats.Unacked++
			continue
		}
		if r.spec.Acks != -1 || !strict {
			continue
		}
		ref := refs[r.partition]
		if r.offset >= int64(len(ref)) || ref[r.offset].value != r.value {
			got := "nothing"
			if r.offset < int64(len(ref)) {
				got = fmt.Sprintf("%q", ref[r.offset].value)
			}
			c.violation("acks=all record %s acknowledged at partition %d offset %d by n%d at %.3fs is lost: the offset holds %s",
				r.value, r.partition, r.offset, r.ackedBy, r.ackedAtSec, got)
			return
		}
	}
}

// sameBelowHW reads a converged partition on its leader below the high
// watermark and checks every other replica holds the same records there.
func (c *Cluster) sameBelowHW(t *metadata.Topic, st metadata.Partition) ([]logEntry, bool) {
	lr := c.nodes[st.Leader].proc.parts[partKey{t.ID, st.Index}]
	ref, err := readAll(lr, lr.core.HighWatermark())
	if err != nil {
		c.violation("%s-%d on leader n%d: %v", t.Name, st.Index, st.Leader, err)
		return nil, false
	}
	for _, id := range st.ISR {
		if id == st.Leader {
			continue
		}
		got, err := readAll(c.nodes[id].proc.parts[partKey{t.ID, st.Index}], lr.core.HighWatermark())
		if err != nil {
			c.violation("%s-%d on n%d: %v", t.Name, st.Index, id, err)
			return nil, false
		}
		for off := range min(len(got), len(ref)) {
			if got[off].value != ref[off].value {
				c.violation("%s-%d offset %d: leader n%d has %q, n%d has %q", t.Name, st.Index, off, st.Leader, ref[off].value, id, got[off].value)
				return nil, false
			}
		}
	}
	return ref, true
}
