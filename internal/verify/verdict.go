package verify

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// maxVerdictReasons is how many distinct failure texts a verdict lists.
const maxVerdictReasons = 3

// Verdict renders r as a few lines for a person: VALID or INVALID, the
// totals, then every anomaly kind with its count and, when there are
// some, the first examples.
func (r *Result) Verdict(m Meta) string {
	var b strings.Builder
	word := "VALID"
	if !r.Valid {
		word = "INVALID"
	}
	fmt.Fprintf(&b, "%s: %d anomalies; %d sent, %d acknowledged, %d failed, %d with unknown outcome, %d reads of %d values by %d consumers\n",
		word, r.Anomalies(), r.Sent, r.Acked, r.Failed, r.Indefinite, r.Reads, r.ReadValues, m.Consumers)
	fmt.Fprintf(&b, "  run: topic %s, %d partitions, %d producers, acks=%s, idempotent=%t, nemesis %s, seed %d, %v\n",
		m.Topic, m.Partitions, m.Producers, m.Acks, m.Idempotent, m.Nemesis, m.Seed, m.Duration)
	if m.GroupMembers > 0 {
		fmt.Fprintf(&b, "  group %s: %d members, %d reads, %d re-deliveries (allowed after a rebalance or failure), %d assignment changes, %d commits accepted, %d failed\n",
			m.Group, m.GroupMembers, r.GroupReads, r.Redeliveries, r.Rebalances, r.Commits, r.CommitsFailed)
		if r.StaleCommits > 0 {
			fmt.Fprintf(&b, "  %d commits from members whose partition had moved lowered a committed offset (allowed by the classic group protocol)\n", r.StaleCommits)
		}
	}
	if !m.DrainComplete {
		note := m.DrainNote
		if note == "" {
			note = "the consumers did not reach the end offsets"
		}
		fmt.Fprintf(&b, "  drain incomplete: %s\n", note)
	}
	reasons := make([]string, 0, len(r.FailureReasons))
	for reason := range r.FailureReasons {
		reasons = append(reasons, reason)
	}
	// Most frequent first, then by text, so the verdict is stable.
	slices.SortFunc(reasons, func(a, b string) int {
		if d := r.FailureReasons[b] - r.FailureReasons[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	for i, reason := range reasons {
		if i == maxVerdictReasons {
			fmt.Fprintf(&b, "  ... and %d more failure reasons\n", len(reasons)-i)
			break
		}
		fmt.Fprintf(&b, "  %d sends failed with: %s\n", r.FailureReasons[reason], reason)
	}
	if r.IndefiniteButPresent > 0 {
		fmt.Fprintf(&b, "  %d sends reported failed with an unknown outcome were written after all (allowed)\n", r.IndefiniteButPresent)
	}
	if m.Workload == WorkloadTxn {
		fmt.Fprintf(&b, "  transactions: %d committed, %d aborted, %d with unknown outcome (%d of them read whole, the rest not at all)\n",
			r.TxnCommitted, r.TxnAborted, r.TxnUnknown, r.TxnUnknownCommitted)
	}
	if st := r.Chain; st != nil {
		fmt.Fprintf(&b, "  chain (group %s, %d transformers, %s -> %s): %d transactions committed, %d aborted, %d with unknown outcome (%d of them read whole); %d producer ids given, %d ends sent by fenced producers (none may commit); %d output reads\n",
			m.ChainGroup, m.Transformers, m.Topic, m.OutputTopic, st.Committed, st.Aborted, st.Unknown, st.UnknownCommitted, st.Inits, st.FencedEnds, st.OutputReads)
		if st.Final == nil {
			b.WriteString("  chain: the group's committed offsets after the run could not be read; offsets and exactly-once not checked\n")
		} else {
			parts := make([]string, 0, len(st.Final))
			for _, p := range slices.Sorted(maps.Keys(st.Final)) {
				parts = append(parts, fmt.Sprintf("%d:%d", p, st.Final[p]))
			}
			fmt.Fprintf(&b, "  chain: committed offsets after the run %s; %d committed inputs below them, %d transformed exactly once\n",
				strings.Join(parts, " "), st.Inputs, st.Transformed)
		}
		if !m.ChainCaughtUp {
			b.WriteString("  chain: stopped before it had committed every input (checked below its committed offsets)\n")
		}
		if !m.ChainDrainComplete {
			note := m.ChainDrainNote
			if note == "" {
				note = "the output consumers did not reach the end offsets"
			}
			fmt.Fprintf(&b, "  chain drain incomplete: %s\n", note)
		}
	}
	kinds := r.kinds
	if kinds == nil {
		kinds = Kinds
	}
	for _, k := range kinds {
		n := r.Counts[k]
		suffix := ""
		if n > 0 && r.IsTolerated(k) {
			suffix = " (allowed by the producer settings)"
		}
		fmt.Fprintf(&b, "  %-20s %d%s\n", k, n, suffix)
		for _, a := range r.Examples[k] {
			fmt.Fprintf(&b, "      %s\n", a.Detail)
		}
		if n > len(r.Examples[k]) && len(r.Examples[k]) > 0 {
			fmt.Fprintf(&b, "      ... and %d more\n", n-len(r.Examples[k]))
		}
	}
	return b.String()
}
