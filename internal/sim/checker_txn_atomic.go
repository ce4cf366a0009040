package sim

import (
	"maps"
	"slices"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
)

// The all-or-nothing check of the coordinator clients' transactions
// (Options.TxnCoordinator), at the end, against the converged data
// partitions and what the read_committed reader delivered:
//   - every transaction ends the same way on each of its partitions: its
//     records on a partition are closed by one marker of its producer,
//     and the markers of all its partitions agree (commit or abort);
//   - an acknowledged EndTxn decided that outcome, and every record of a
//     transaction whose commit was acknowledged is in the log;
//   - the reader delivered no record of an aborted or still open
//     transaction, and, on each partition it has read past a committed
//     transaction's marker, every one of the transaction's records.

// txnOutcome is what the clients learned of a transaction's end.
type txnOutcome struct {
	commitAcked, abortAcked bool
	acked                   map[int32]int // records of acknowledged batches per partition
}

func (k *checker) txnOutcomeOf(name string) *txnOutcome {
	o, ok := k.txnCoord.outcomes[name]
	if !ok {
		o = &txnOutcome{acked: map[int32]int{}}
		k.txnCoord.outcomes[name] = o
	}
	return o
}

// txnBatchAcked: the batch of count records of transaction name on
// partition part was acknowledged.
func (k *checker) txnBatchAcked(name string, part int32, count int) {
	k.txnOutcomeOf(name).acked[part] += count
}

// txnEndOutcome: EndTxn for transaction name succeeded.
func (k *checker) txnEndOutcome(name string, commit bool) {
	o := k.txnOutcomeOf(name)
	if commit {
		o.commitAcked = true
	} else {
		o.abortAcked = true
	}
}

// txnSpan is one transaction's records on one partition of the converged
// log and the marker that closed them (-1: none yet).
type txnSpan struct {
	records []string
	marker  int64
	commit  bool
	late    bool // records of the transaction after its marker
}

// finalTxnAtomicCheck runs the all-or-nothing check; false after a
// violation.
func (k *checker) finalTxnAtomicCheck(ctl *process) bool {
	// Where acknowledged writes may have been lost (write caching and a
	// power loss, or a rotted byte) a marker or batch a reader saw may be
	// gone from the converged log: nothing to judge against.
	if !k.c.opts.TxnCoordinator || !k.strict() {
		return true
	}
	t, ok := ctl.image.Topic(topicName)
	if !ok {
		return true
	}
	spans := map[string]map[int32]*txnSpan{} // by transaction, by partition
	for _, st := range t.Partitions {
		lr := k.c.nodes[st.Leader].proc.parts[partKey{t.ID, st.Index}]
		open := map[int64][]*txnSpan{} // spans of each producer awaiting its marker
		err := scanBatches(lr, lr.core.HighWatermark(), func(h batch.Header, recs []records.Record) {
			switch {
			case h.IsControl():
				commit := len(recs) > 0 && isCommitMarker(recs[0])
				for _, sp := range open[h.ProducerID] {
					if sp.marker < 0 {
						sp.marker, sp.commit = h.BaseOffset, commit
					}
				}
				delete(open, h.ProducerID)
			case h.IsTransactional():
				for _, rec := range recs {
					v := string(rec.Value)
					name, ok := k.txnCoord.txnOf[v]
					if !ok {
						continue
					}
					if spans[name] == nil {
						spans[name] = map[int32]*txnSpan{}
					}
					sp := spans[name][st.Index]
					if sp == nil {
						sp = &txnSpan{marker: -1}
						spans[name][st.Index] = sp
					}
					sp.late = sp.late || sp.marker >= 0
					sp.records = append(sp.records, v)
					if !slices.Contains(open[h.ProducerID], sp) {
						open[h.ProducerID] = append(open[h.ProducerID], sp)
					}
				}
			}
		})
		if err != nil {
			k.c.violation("%s-%d: %v", topicName, st.Index, err)
			return false
		}
	}
	for _, name := range slices.Sorted(maps.Keys(k.txnCoord.outcomes)) {
		o := k.txnCoord.outcomes[name]
		for p, n := range o.acked {
			sp := spans[name][p]
			if o.commitAcked && (sp == nil || len(sp.records) < n) {
				k.c.violation("transaction %s: commit acknowledged, %d records acknowledged on partition %d, the log holds %d", name, n, p, len(spansRecords(sp)))
				return false
			}
		}
	}
	reader := k.txnCoord.reader
	for _, name := range slices.Sorted(maps.Keys(spans)) {
		byPart := spans[name]
		o := k.txnCoord.outcomes[name]
		var commits, aborts, open int
		for _, p := range slices.Sorted(maps.Keys(byPart)) {
			sp := byPart[p]
			switch {
			case sp.late:
				k.c.violation("transaction %s: records on partition %d after its producer's marker at %d", name, p, sp.marker)
				return false
			case sp.marker < 0:
				open++
			case sp.commit:
				commits++
			default:
				aborts++
			}
			delivered := 0
			for _, v := range sp.records {
				if reader != nil && reader.got[v] {
					delivered++
				}
			}
			switch {
			case delivered > 0 && (sp.marker < 0 || !sp.commit):
				k.c.violation("transaction %s: read_committed delivered %d of its records on partition %d, which its producer's marker at %d did not commit (commit=%v)", name, delivered, p, sp.marker, sp.commit)
				return false
			case sp.commit && reader != nil && reader.next[p] > sp.marker && delivered != len(sp.records):
				k.c.violation("transaction %s: committed at partition %d offset %d, read_committed read past it and delivered %d of its %d records", name, p, sp.marker, delivered, len(sp.records))
				return false
			}
		}
		switch {
		case commits > 0 && aborts > 0:
			k.c.violation("transaction %s: committed on %d partitions, aborted on %d", name, commits, aborts)
			return false
		case o != nil && o.commitAcked && aborts > 0:
			k.c.violation("transaction %s: commit acknowledged, aborted on %d partitions", name, aborts)
			return false
		case o != nil && o.abortAcked && commits > 0:
			k.c.violation("transaction %s: abort acknowledged, committed on %d partitions", name, commits)
			return false
		case commits > 0:
			k.stats.TxnCoordCommitted++
		case aborts > 0:
			k.stats.TxnCoordAborted++
		}
	}
	return true
}

func spansRecords(sp *txnSpan) []string {
	if sp == nil {
		return nil
	}
	return sp.records
}
