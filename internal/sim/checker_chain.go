package sim

import (
	"encoding/binary"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
)

// The chain's checks (client_chain.go), at the end, against the converged
// logs:
//   - committed offsets move exactly with their transaction: every offset
//     the group's coordinator answered (OffsetFetch, require_stable) is the
//     input position of a transaction that committed (its EndTxn commit
//     acknowledged, or its COMMIT marker on the output partition), never
//     one only aborted or undecided transactions carried;
//   - an acknowledged EndTxn decided the output's marker;
//   - exactly once: the committed output holds, for each record
//     read_committed can read from the input partition below the last
//     committed position, exactly one transformed record, and nothing
//     at or past it.

type chainChecks struct {
	carried map[string]int64 // input position each transaction commits
	acked   map[string]bool  // EndTxn acknowledged: true for commit
	seen    map[int64]bool   // offsets the group's coordinator answered
}

func (k *checker) chain() *chainChecks {
	if k.chainState == nil {
		k.chainState = &chainChecks{carried: map[string]int64{}, acked: map[string]bool{}, seen: map[int64]bool{}}
	}
	return k.chainState
}

func (k *checker) chainTxnBegun(txn string, position int64) { k.chain().carried[txn] = position }
func (k *checker) chainTxnEnded(txn string, commit bool)    { k.chain().acked[txn] = commit }
func (k *checker) chainOffsetSeen(offset int64)             { k.chain().seen[offset] = true }

// chainOutput is one transformed record of the converged output log.
type chainOutput struct {
	txn    string
	input  int64
	value  string
	offset int64
}

func parseChainRecord(v string, offset int64) (chainOutput, bool) {
	txn, rest, ok := strings.Cut(v, "|")
	if !ok {
		return chainOutput{}, false
	}
	in, value, ok := strings.Cut(rest, "|")
	if !ok {
		return chainOutput{}, false
	}
	n, err := strconv.ParseInt(in, 10, 64)
	return chainOutput{txn: txn, input: n, value: value, offset: offset}, err == nil
}

// finalChainCheck runs the chain's checks; false after a violation.
func (k *checker) finalChainCheck(ctl *process) bool {
	if !k.c.opts.TxnCoordinator || !k.strict() || k.chainState == nil {
		return true
	}
	ch := k.chainState
	// The output's transactions, by the markers that closed them.
	outcome := map[string]bool{} // true: committed
	var committed []chainOutput
	if t, ok := ctl.image.Topic(chainOutputTopic); ok {
		lr := k.c.nodes[t.Partitions[0].Leader].proc.parts[partKey{t.ID, 0}]
		open := map[int64][]chainOutput{}
		err := scanBatches(lr, lr.core.HighWatermark(), func(h batch.Header, recs []records.Record) {
			switch {
			case h.IsControl():
				commit := len(recs) > 0 && isCommitMarker(recs[0])
				for _, o := range open[h.ProducerID] {
					outcome[o.txn] = commit
					if commit {
						committed = append(committed, o)
					}
				}
				delete(open, h.ProducerID)
			case h.IsTransactional():
				for _, rec := range recs {
					if o, ok := parseChainRecord(string(rec.Value), rec.Offset(h)); ok {
						open[h.ProducerID] = append(open[h.ProducerID], o)
					}
				}
			}
		})
		if err != nil {
			k.c.violation("%s-0: %v", chainOutputTopic, err)
			return false
		}
	}
	for _, txn := range slices.Sorted(maps.Keys(ch.acked)) {
		if c, ok := outcome[txn]; ok && c != ch.acked[txn] {
			k.c.violation("chain transaction %s: EndTxn(commit=%v) acknowledged, its output marker says commit=%v", txn, ch.acked[txn], c)
			return false
		}
	}
	final := int64(-1) // the last committed position
	committedAt := map[int64]bool{}
	for _, txn := range slices.Sorted(maps.Keys(ch.carried)) {
		c, marked := outcome[txn]
		ackedCommit, acked := ch.acked[txn]
		switch {
		case marked && c || acked && ackedCommit:
			committedAt[ch.carried[txn]] = true
			final = max(final, ch.carried[txn])
			k.stats.ChainCommitted++
		case marked || acked:
			k.stats.ChainAborted++
		}
	}
	for _, off := range slices.Sorted(maps.Keys(ch.seen)) {
		if off >= 0 && !committedAt[off] {
			k.c.violation("chain group %s: its coordinator answered committed offset %d, which no committed transaction carried", chainGroup, off)
			return false
		}
	}
	return k.chainExactlyOnce(ctl, committed, final)
}

// isCommitMarker: r, a control batch's record, is a COMMIT marker.
func isCommitMarker(r records.Record) bool {
	return len(r.Key) >= 4 && int16(binary.BigEndian.Uint16(r.Key[2:4])) == batch.ControlTypeCommit
}

// chainExactlyOnce compares the committed output with what read_committed
// can read from the input partition below final.
func (k *checker) chainExactlyOnce(ctl *process, committed []chainOutput, final int64) bool {
	want := map[int64]string{}
	if t, ok := ctl.image.Topic(topicName); ok && final > 0 {
		lr := k.c.nodes[t.Partitions[chainInputPartition].Leader].proc.parts[partKey{t.ID, chainInputPartition}]
		pending := map[int64]map[int64]string{} // transactional records by producer, awaiting its marker
		// To the high watermark: a transaction below final may have its
		// marker above it.
		err := scanBatches(lr, lr.core.HighWatermark(), func(h batch.Header, recs []records.Record) {
			switch {
			case h.IsControl():
				if len(recs) > 0 && isCommitMarker(recs[0]) {
					maps.Copy(want, pending[h.ProducerID])
				}
				delete(pending, h.ProducerID)
			case h.IsTransactional():
				if pending[h.ProducerID] == nil {
					pending[h.ProducerID] = map[int64]string{}
				}
				for _, rec := range recs {
					pending[h.ProducerID][rec.Offset(h)] = string(rec.Value)
				}
			default:
				for _, rec := range recs {
					want[rec.Offset(h)] = string(rec.Value)
				}
			}
		})
		if err != nil {
			k.c.violation("%s-%d: %v", topicName, chainInputPartition, err)
			return false
		}
		for off := range want {
			if off >= final {
				delete(want, off)
			}
		}
	}
	got := map[int64]chainOutput{}
	for _, o := range committed {
		switch prev, dup := got[o.input]; {
		case dup:
			k.c.violation("chain output: input offset %d transformed twice, by %s at %d and %s at %d", o.input, prev.txn, prev.offset, o.txn, o.offset)
			return false
		case o.input >= final:
			k.c.violation("chain output: %s at %d transforms input offset %d, at or past the last committed position %d", o.txn, o.offset, o.input, final)
			return false
		case want[o.input] != o.value:
			k.c.violation("chain output: %s at %d transforms input offset %d as %q; read_committed reads %q there", o.txn, o.offset, o.input, o.value, want[o.input])
			return false
		}
		got[o.input] = o
	}
	for _, off := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[off]; !ok {
			k.c.violation("chain output: input offset %d (%q), below the last committed position %d, never transformed in a committed transaction", off, want[off], final)
			return false
		}
	}
	k.stats.ChainRecords += len(got)
	return true
}
