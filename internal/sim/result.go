package sim

import (
	"fmt"
	"strings"
)

func (c *Cluster) result() Result {
	st := c.check.stats
	st.MessagesSent, st.Dropped = c.net.sent, c.net.dropped
	if c.voters != nil {
		st.VotersAdded, st.VotersRemoved, st.KRaftUpgrades = c.voters.added, c.voters.removed, c.voters.upgraded
	}
	st.TxnEnded, st.TxnAborted, st.TxnRead = c.check.txns.ended, c.check.txns.aborted, c.check.txns.readRecs
	return Result{Seed: c.opts.Seed, Options: c.opts, SimTime: c.s.now, Steps: c.s.steps, TraceHash: c.trace.hash,
		Violations: c.check.violations, Trace: c.trace.tail(), Stats: st}
}

// Failure renders a failed run for a person; test is the top-level test
// that ran it, named in the replay command.
func (r Result) Failure(test string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "seed %d FAILED after %v simulated (%d steps)\n", r.Seed, r.SimTime, r.Steps)
	fmt.Fprintf(&sb, "options: %s\n", r.Options)
	for _, v := range r.Violations {
		fmt.Fprintf(&sb, "violation: %s\n", v)
	}
	fmt.Fprintf(&sb, "replay: go test ./internal/sim/ -run '^%s$' -sim.seed=%d -sim.duration=%v -v\n", test, r.Seed, r.Options.Duration)
	fmt.Fprintf(&sb, "last events:\n%s", r.Trace)
	return sb.String()
}
