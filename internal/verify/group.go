package verify

import "fmt"

// groupChecker follows a consumer group through the history: who owns
// which partition, what was committed, and what the members read.
//
// What Kafka promises a group (and what is checked): every record is
// consumed by some member at least once; a member given a partition
// resumes at the committed offset, so it may read again what a former
// owner read but did not commit (a re-delivery, allowed and counted),
// and never starts past the commit (that would skip records no one
// committed); the committed offset of a partition never goes back.
type groupChecker struct {
	// seq numbers the group's events in history order.
	seq int
	// ownedSince is, per member and partition it owns, the seq of the
	// assignment that gave it.
	ownedSince map[consumerPartition]int
	// resuming marks a member's partitions given to it and not read yet:
	// its next read there is where it resumed.
	resuming map[consumerPartition]bool
	// attempted is, per partition, the highest offset any member tried to
	// commit so far (an unanswered or failed commit may have been applied).
	attempted map[int32]int64
	// stored is, per partition, the last commit the coordinator accepted:
	// what it holds now.
	stored  map[int32]acceptedCommit
	read    map[string]bool
	maxRead map[int32]int64
}

type acceptedCommit struct {
	offset int64
	member int
	seq    int
}

func newGroupChecker() *groupChecker {
	return &groupChecker{ownedSince: map[consumerPartition]int{}, resuming: map[consumerPartition]bool{},
		attempted: map[int32]int64{}, stored: map[int32]acceptedCommit{},
		read: map[string]bool{}, maxRead: map[int32]int64{}}
}

// groupEvent takes an assign, revoke or commit event.
func (c *checker) groupEvent(e *Event) {
	g := c.group
	g.seq++
	switch e.Type {
	case EventAssign:
		c.res.Rebalances++
		for _, p := range e.Partitions {
			cp := consumerPartition{e.Consumer, p}
			g.ownedSince[cp], g.resuming[cp] = g.seq, true
			delete(c.lastRead, cp) // a new run of reads begins where it resumes
		}
	case EventRevoke:
		c.res.Rebalances++
		for _, p := range e.Partitions {
			cp := consumerPartition{e.Consumer, p}
			delete(g.ownedSince, cp)
			delete(g.resuming, cp)
		}
	case EventCommit:
		if o, ok := g.attempted[e.Partition]; !ok || e.Offset > o {
			g.attempted[e.Partition] = e.Offset
		}
	case EventCommitDone:
		c.commitDone(e)
	}
}

// commitDone takes a commit's answer. An accepted commit below the one
// the coordinator held is allowed in one case: the classic group protocol
// checks a committer's generation, not which partitions it owns, so a
// member that has not yet heard its partition moved (its assignment began
// before the other member's commit, or it no longer owns the partition)
// may still commit what it read there. That lowers the committed offset
// and means re-deliveries, not loss. Otherwise the coordinator forgot an
// accepted commit (the new owner resumed below it) or accepted a member's
// commits out of order: an anomaly.
func (c *checker) commitDone(e *Event) {
	g := c.group
	if e.Err != "" {
		c.res.CommitsFailed++
		return
	}
	c.res.Commits++
	cp := consumerPartition{e.Consumer, e.Partition}
	prev, ok := g.stored[e.Partition]
	g.stored[e.Partition] = acceptedCommit{offset: e.Offset, member: e.Consumer, seq: g.seq}
	if !ok || e.Offset >= prev.offset {
		return
	}
	since, owns := g.ownedSince[cp]
	if !owns || (prev.member != e.Consumer && since < prev.seq) {
		c.res.StaleCommits++
		return
	}
	c.res.add(Anomaly{Kind: CommitRegressed, Partition: e.Partition, Offset: e.Offset, Consumer: e.Consumer,
		Detail: fmt.Sprintf("member %d's commit of offset %d for partition %d was accepted after member %d's of offset %d", e.Consumer, e.Offset, e.Partition, prev.member, prev.offset)})
}

// groupRead takes a member's read: where it resumed, or how it continued,
// and whether the group had read the value before.
func (c *checker) groupRead(e *Event) {
	g := c.group
	g.seq++
	c.res.GroupReads++
	if g.read[e.Value] {
		c.res.Redeliveries++
	}
	g.read[e.Value] = true
	if m, ok := g.maxRead[e.Partition]; !ok || e.Offset > m {
		g.maxRead[e.Partition] = e.Offset
	}
	cp := consumerPartition{e.Consumer, e.Partition}
	if !g.resuming[cp] {
		return
	}
	delete(g.resuming, cp)
	// With no commit the member starts at the log start (the reset
	// policy), offset 0 in a verify topic.
	if limit := g.attempted[e.Partition]; e.Offset > limit {
		c.res.add(Anomaly{Kind: GroupResumeSkip, Value: e.Value, Partition: e.Partition, Offset: e.Offset, Consumer: e.Consumer,
			Detail: fmt.Sprintf("member %d resumed partition %d at offset %d, past the highest commit %d, skipping %d records", e.Consumer, e.Partition, e.Offset, limit, e.Offset-limit)})
	}
}

// checkGroupAcked finds acknowledged values no member read.
func (c *checker) checkGroupAcked() {
	g := c.group
	for _, a := range c.acks {
		if g.read[a.value] {
			continue
		}
		kind, why := GroupUnseen, a.value+": acknowledged"
		if a.at.offset >= 0 {
			why += " at " + a.at.String()
			if m, ok := g.maxRead[a.at.partition]; ok && m > a.at.offset {
				kind, why = GroupLost, fmt.Sprintf("%s, never read by the group, though offset %d was", why, m)
			}
		}
		if kind == GroupUnseen {
			why += ", never read by the group by the end"
		}
		c.res.add(Anomaly{Kind: kind, Value: a.value, Partition: a.at.partition, Offset: a.at.offset, Detail: why})
	}
}
