package group

import (
	"fmt"
	"strings"
	"testing"
)

// txnCommit commits offsets in producer pid's transaction at epoch as who
// ("" with gen -1: v0-2's request without member checks; "alias[@instance]"
// with gen -2: the alias's generation).
func txnCommit(pid int64, epoch int16, who string, gen int32, offsets ...string) op {
	return func(h *harness) {
		who, instance, _ := strings.Cut(who, "@")
		if gen == -2 {
			gen = h.gens[who]
		}
		member, known := h.ids[who]
		if !known {
			member = who // an id the coordinator never gave
		}
		req := TxnCommitRequest{GroupID: testGroup, ProducerID: pid, ProducerEpoch: epoch,
			MemberID: member, InstanceID: instance, Generation: gen, Offsets: h.parseOffsets(offsets)}
		res, out := h.c.TxnCommitOffsets(h.now, req)
		h.take(out)
		h.events = append(h.events, "txn commit: "+joinErrs(res))
	}
}

// txnEnd is pid's marker at epoch committed on the partition: in the log
// (for failover) and reported to the coordinator, as WriteTxnMarkers does.
func txnEnd(pid int64, epoch int16, commit bool) op {
	return func(h *harness) {
		h.log = append(h.log, logEntry{marker: &markerEntry{producerID: pid, epoch: epoch, commit: commit}})
		h.c.TxnCompleted(pid, commit)
	}
}

// fetchStable renders every requested partition's offset, "unstable" for
// one with transactional offsets pending.
func fetchStable(tps ...string) op {
	return func(h *harness) {
		var fs []string
		for _, f := range h.c.FetchOffsets(testGroup, parseTPs(tps)) {
			e := fmt.Sprintf("%s-%d=%d", f.Topic, f.Partition, f.Offset)
			if f.Unstable {
				e += " unstable"
			}
			fs = append(fs, e)
		}
		h.events = append(h.events, "fetch: "+strings.Join(fs, ","))
	}
}

func groups() op {
	return func(h *harness) {
		var ids []string
		for _, l := range h.c.ListGroups(nil) {
			ids = append(ids, l.GroupID)
		}
		h.events = append(h.events, "groups: "+strings.Join(ids, ","))
	}
}

func TestTxnOffsetScenarios(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "pending until the commit marker, then committed", steps: []step{
			{0, commit("", -1, "t-0=3"), []string{"record offset g t-0=3", "commit: ok"}},
			{10, txnCommit(1, 0, "", -1, "t-0=5", "t-1=7"), []string{
				"txn 1/0 record offset g t-0=5", "txn 1/0 record offset g t-1=7", "txn commit: ok,ok",
			}},
			// Invisible: the committed offset, and none for t-1; both unstable.
			{20, fetchStable("t-0", "t-1", "t-2"), []string{"fetch: t-0=3 unstable,t-1=-1 unstable,t-2=-1"}},
			{30, fetchAll(), []string{"offsets: t-0=3"}},
			// A new coordinator rebuilds the pending offsets from the log.
			{40, failover(), []string{"failover"}},
			{50, fetchStable("t-0", "t-1"), []string{"fetch: t-0=3 unstable,t-1=-1 unstable"}},
			{60, txnEnd(1, 0, true), nil},
			{70, fetchStable("t-0", "t-1"), []string{"fetch: t-0=5,t-1=7"}},
			{80, failover(), []string{"failover"}},
			{90, fetchAll(), []string{"offsets: t-0=5,t-1=7"}},
		}},
		{name: "an abort drops them, also on replay", steps: []step{
			{0, commit("", -1, "t-0=3"), []string{"record offset g t-0=3", "commit: ok"}},
			{10, txnCommit(1, 0, "", -1, "t-0=5"), []string{"txn 1/0 record offset g t-0=5", "txn commit: ok"}},
			{20, txnEnd(1, 0, false), nil},
			{30, fetchStable("t-0"), []string{"fetch: t-0=3"}},
			{40, failover(), []string{"failover"}},
			{50, fetchStable("t-0"), []string{"fetch: t-0=3"}},
			// The same producer's next transaction in the same epoch.
			{60, txnCommit(1, 0, "", -1, "t-0=6"), []string{"txn 1/0 record offset g t-0=6", "txn commit: ok"}},
			{70, txnEnd(1, 0, true), nil},
			{80, fetchStable("t-0"), []string{"fetch: t-0=6"}},
		}},
		{name: "producers are independent", steps: []step{
			{0, txnCommit(1, 0, "", -1, "t-0=5"), []string{"txn 1/0 record offset g t-0=5", "txn commit: ok"}},
			{10, txnCommit(2, 4, "", -1, "t-1=8"), []string{"txn 2/4 record offset g t-1=8", "txn commit: ok"}},
			{20, txnEnd(2, 4, true), nil},
			{30, fetchStable("t-0", "t-1"), []string{"fetch: t-0=-1 unstable,t-1=8"}},
			{40, txnEnd(1, 0, false), nil},
			{50, fetchStable("t-0", "t-1"), []string{"fetch: t-0=-1,t-1=8"}},
			{60, failover(), []string{"failover"}},
			// A marker for a producer with nothing pending changes nothing.
			{70, txnEnd(3, 0, true), nil},
			{80, fetchAll(), []string{"offsets: t-1=8"}},
		}},
		{name: "a commit written after the transaction's offsets wins", steps: []step{
			{0, txnCommit(1, 0, "", -1, "t-0=5"), []string{"txn 1/0 record offset g t-0=5", "txn commit: ok"}},
			{10, commit("", -1, "t-0=7"), []string{"record offset g t-0=7", "commit: ok"}},
			{20, failover(), []string{"failover"}},
			{30, txnEnd(1, 0, true), nil},
			{40, fetchStable("t-0"), []string{"fetch: t-0=7"}},
			{50, failover(), []string{"failover"}},
			{60, fetchStable("t-0"), []string{"fetch: t-0=7"}},
		}},
		{name: "an older producer epoch is fenced, also after replaying a newer marker", steps: []step{
			{0, txnCommit(1, 2, "", -1, "t-0=5"), []string{"txn 1/2 record offset g t-0=5", "txn commit: ok"}},
			{10, txnCommit(1, 1, "", -1, "t-0=6"), []string{"txn commit: INVALID_PRODUCER_EPOCH"}},
			// InitProducerId bumped the epoch and aborted at the new one.
			{20, txnEnd(1, 3, false), nil},
			{30, failover(), []string{"failover"}},
			{40, txnCommit(1, 2, "", -1, "t-0=6"), []string{"txn commit: INVALID_PRODUCER_EPOCH"}},
			{50, txnCommit(1, 3, "", -1, "t-0=6"), []string{"txn 1/3 record offset g t-0=6", "txn commit: ok"}},
		}},
		{name: "v3's group checks (KIP-447)", steps: []step{
			{0, join("a", static("ia")), nil},
			{3000, tick(), []string{"join a: gen=1 proto=range leader=a members=a"}},
			{3010, sync("a", "a=p0"), []string{`record group g gen=1 members=[a="p0"]`, `sync a: "p0"`}},
			{3020, txnCommit(1, 0, "a", 9, "t-0=5"), []string{"txn commit: ILLEGAL_GENERATION"}},
			{3030, txnCommit(1, 0, "ghost", -1, "t-0=5"), []string{"txn commit: UNKNOWN_MEMBER_ID"}},
			{3040, txnCommit(1, 0, "ghost@ia", -2, "t-0=5"), []string{"txn commit: FENCED_INSTANCE_ID"}},
			{3050, txnCommit(1, 0, "a@ia", -2, "t-0=5"), []string{"txn 1/0 record offset g t-0=5", "txn commit: ok"}},
			// v0-2 carry no member: only the producer counts.
			{3060, txnCommit(1, 0, "", -1, "t-0=6"), []string{"txn 1/0 record offset g t-0=6", "txn commit: ok"}},
			// Unlike OffsetCommit, a rebalance does not refuse the commit.
			{3070, join("b"), nil},
			{3080, join("a", static("ia")), []string{"join a: gen=2 proto=range leader=a members=a,b", "join b: gen=2 proto=range leader=a"}},
			{3090, both(commit("a@ia", -2, "t-0=7"), txnCommit(1, 0, "a@ia", -2, "t-0=8")), []string{
				"commit: REBALANCE_IN_PROGRESS", "txn 1/0 record offset g t-0=8", "txn commit: ok",
			}},
		}},
		{name: "deleting a group drops its pending offsets, also on replay", steps: []step{
			{0, commit("", -1, "t-0=1"), []string{"record offset g t-0=1", "commit: ok"}},
			{10, txnCommit(1, 0, "", -1, "t-0=5"), []string{"txn 1/0 record offset g t-0=5", "txn commit: ok"}},
			{20, deleteGroup(), []string{"tombstone offset g t-0", "tombstone group g", "delete group: ok"}},
			{30, failover(), []string{"failover"}},
			{40, txnEnd(1, 0, true), nil},
			{50, groups(), []string{"groups: "}},
		}},
		{name: "pending offsets keep a group; metadata is bounded", steps: []step{
			{0, txnCommit(1, 0, "", -1, "t-0=5", "t-1=6/0123456789abcdefX"), []string{
				"txn 1/0 record offset g t-0=5", "txn commit: ok,OFFSET_METADATA_TOO_LARGE",
			}},
			{10, expire(), nil},
			{20, groups(), []string{"groups: g"}},
			{30, txnEnd(1, 0, false), nil},
			{40, groups(), []string{"groups: "}},
		}},
	})
}
