package grouphost

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/storage"
)

func commit(b Backend, groupID string, offset int64, got *[]string) {
	b.CommitOffsets(group.CommitRequest{GroupID: groupID, Generation: -1,
		Offsets: []group.CommitOffset{{Topic: "t", Partition: 0, Offset: offset, LeaderEpoch: -1}}},
		func(_ []group.PartitionError, err error) {
			*got = append(*got, fmt.Sprintf("commit %d: %v", offset, err))
		})
}

// TestAnswersWaitForTheirWriteAndEarlierOnes: a commit is answered once
// its record is committed; an OffsetFetch after it, which writes nothing,
// waits too (else it could show an offset that is then lost). Outcomes
// reported out of order are applied in write order.
func TestAnswersWaitForTheirWriteAndEarlierOnes(t *testing.T) {
	h := newActive(t)
	b := Backend{Hosts: testHosts{[]*testHandle{h}}}
	var got []string
	commit(b, "g", 1, &got)
	commit(b, "g", 2, &got)
	b.FetchOffsets("g", nil, func(f []group.FetchedOffset, err error) {
		got = append(got, fmt.Sprintf("fetch %v: %v", f[0].Offset, err))
	})
	if len(got) != 0 || len(h.pending) != 2 {
		t.Fatalf("answered %v with %d writes pending", got, len(h.pending))
	}
	h.complete(1, nil) // the second write's outcome first
	if len(got) != 0 {
		t.Fatalf("answered %v before the first write was committed", got)
	}
	h.complete(0, nil)
	want := []string{"commit 1: <nil>", "commit 2: <nil>", "fetch 2: <nil>"}
	if !slices.Equal(got, want) {
		t.Fatalf("answers %v, want %v", got, want)
	}
}

// TestFailedWriteAnswersNotCoordinatorAndReloads: the coordinator's memory
// ran ahead of its log, so the answers that depended on the write get
// NOT_COORDINATOR and the runtime is asked to reload.
func TestFailedWriteAnswersNotCoordinatorAndReloads(t *testing.T) {
	h := newActive(t)
	b := Backend{Hosts: testHosts{[]*testHandle{h}}}
	var got []string
	var errs []error
	b.CommitOffsets(group.CommitRequest{GroupID: "g", Generation: -1,
		Offsets: []group.CommitOffset{{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1}}},
		func(_ []group.PartitionError, err error) { errs = append(errs, err) })
	h.complete(0, kerr.RequestTimedOut)
	if len(errs) != 1 || !errors.Is(errs[0], kerr.NotCoordinator) {
		t.Fatalf("commit answered %v, want NOT_COORDINATOR", errs)
	}
	if len(h.reloads) != 1 {
		t.Fatalf("reloads asked %v, want one", h.reloads)
	}
	// Once stopped, new requests go elsewhere; the parked are answered.
	h.carry(h.host.Stop())
	commit(b, "g", 2, &got)
	if len(got) != 1 || got[0] != "commit 2: NOT_COORDINATOR: This is not the correct coordinator." {
		t.Fatalf("after stop: %v", got)
	}
}

// TestLoadedTailMustCommit: answers of a freshly loaded Host wait until
// the log it replayed is committed; if it is not in time, they get
// NOT_COORDINATOR and the partition is reloaded.
func TestLoadedTailMustCommit(t *testing.T) {
	l := openLog(t, storage.DefaultConfig())
	appendBatch(t, l, recordsBatch(commitRecords(t, "g", group.CommitOffset{Topic: "t", Partition: 0, Offset: 42, LeaderEpoch: -1}), 0), 0)
	loaded, err := Replay(group.DefaultConfig(), 1, l, "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, outcome := range []error{nil, kerr.RequestTimedOut} {
		h := &testHandle{t: t, host: New("p")}
		if err := h.Do(func(host *Host, now int64) (Ready, error) { return host.Activate(now, loaded), nil }); err != nil {
			t.Fatal(err)
		}
		if len(h.pending) != 1 || h.pending[0].Records != nil || h.pending[0].AwaitCommitted != 1 {
			t.Fatalf("writes after activation %+v, want a wait for offset 1", h.pending)
		}
		b := Backend{Hosts: testHosts{[]*testHandle{h}}}
		var fetched []group.FetchedOffset
		var answered []error
		b.FetchOffsets("g", nil, func(f []group.FetchedOffset, err error) { fetched, answered = f, append(answered, err) })
		if len(answered) != 0 {
			t.Fatal("answered from a loaded tail not known to be committed")
		}
		h.complete(0, outcome)
		switch {
		case len(answered) != 1:
			t.Fatalf("%v: answered %d times", outcome, len(answered))
		case outcome == nil && (answered[0] != nil || len(fetched) != 1 || fetched[0].Offset != 42):
			t.Fatalf("committed tail: answered %v %v", fetched, answered[0])
		case outcome != nil && (!errors.Is(answered[0], kerr.NotCoordinator) || len(h.reloads) != 1):
			t.Fatalf("uncommitted tail: answered %v, reloads %v", answered[0], h.reloads)
		}
	}
}

// groupsOn returns n group ids whose coordinator is partition part of
// partitions.
func groupsOn(part, partitions int32, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		id := fmt.Sprintf("group-%d", i)
		if group.PartitionFor(id, partitions) == part {
			out = append(out, id)
		}
	}
	return out
}

// TestDeleteGroupsWritesOncePerCoordinator resolves issue #11 difference
// (5): as in Kafka, the tombstones of every group of one coordinator go
// out in one write (one batch to replicate and wait for; the groups of a
// partition are deleted together or not at all), not one write per group
// as the simulator's copy did.
func TestDeleteGroupsWritesOncePerCoordinator(t *testing.T) {
	hosts := testHosts{[]*testHandle{newActive(t), newActive(t)}}
	b := Backend{Hosts: hosts}
	on0, on1 := groupsOn(0, 2, 3), groupsOn(1, 2, 1)
	ids := []string{on0[0], on1[0], on0[1], "", on0[2]}
	var got []string
	for _, id := range ids {
		if id != "" {
			commit(b, id, 1, &got)
		}
	}
	for _, h := range hosts.parts {
		h.completeAll(nil)
		h.appended = nil
	}
	var answer []error
	b.DeleteGroups(ids, func(errs []error) { answer = errs })
	if w0, w1 := len(hosts.parts[0].appended), len(hosts.parts[1].appended); w0 != 1 || w1 != 1 {
		t.Fatalf("writes per coordinator: %d and %d, want one each", w0, w1)
	}
	// Each group (a simple consumer's) has one offset: one tombstone.
	if n := len(hosts.parts[0].appended[0]); n != len(on0) {
		t.Fatalf("partition 0's write holds %d tombstones, want %d", n, len(on0))
	}
	hosts.parts[0].completeAll(nil)
	if answer != nil {
		t.Fatal("answered before every coordinator's share was committed")
	}
	hosts.parts[1].completeAll(kerr.RequestTimedOut)
	if len(answer) != len(ids) {
		t.Fatalf("answer %v", answer)
	}
	for i, err := range answer {
		switch {
		case ids[i] == "":
			if !errors.Is(err, kerr.InvalidGroupID) {
				t.Fatalf("empty id: %v", err)
			}
		case ids[i] == on1[0]:
			if !errors.Is(err, kerr.NotCoordinator) {
				t.Fatalf("%s, whose write failed: %v", ids[i], err)
			}
		case err != nil:
			t.Fatalf("%s: %v", ids[i], err)
		}
	}
}

// TestWritesRefusedWhileThePartitionCannotTakeThem: an offset commit to
// a partition below min.insync.replicas is refused up front, without
// touching the coordinator's memory.
func TestWritesRefusedWhileThePartitionCannotTakeThem(t *testing.T) {
	h := newActive(t)
	h.writable = kerr.NotEnoughReplicas
	b := Backend{Hosts: testHosts{[]*testHandle{h}}}
	var errs []error
	b.CommitOffsets(group.CommitRequest{GroupID: "g", Generation: -1,
		Offsets: []group.CommitOffset{{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1}}},
		func(_ []group.PartitionError, err error) { errs = append(errs, err) })
	if len(errs) != 1 || !errors.Is(errs[0], kerr.CoordinatorNotAvailable) || len(h.pending) != 0 {
		t.Fatalf("answers %v, %d writes; want COORDINATOR_NOT_AVAILABLE and none", errs, len(h.pending))
	}
	h.writable = nil
	var fetched []group.FetchedOffset
	b.FetchOffsets("g", nil, func(f []group.FetchedOffset, _ error) { fetched = f })
	if len(fetched) != 0 {
		t.Fatalf("a refused commit changed the coordinator: %v", fetched)
	}
}
