package node

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// TestOpenFilesLimitLeavesReplicasClosed: a reconcile opens new replicas
// only while descriptorReserve descriptors stay free; the others stay
// closed, reported with errOpenFilesLimit (no log directory goes offline),
// and open at a later reconcile once the limit leaves room.
func TestOpenFilesLimitLeavesReplicasClosed(t *testing.T) {
	fs := memWithLogDir(t)
	b := newUnitBroker(t, fs)
	limit := 1000
	// Room for 2 new replicas: 742 open + 256 kept free (the reserve of a
	// limit of 1,000), each replica open holding one more.
	b.openFiles = func() (int, int, bool) { return 742 + len(b.partitionList()), limit, true }
	im := createImage(t, 5)
	err := reconcileOn(b, im)
	if !errors.Is(err, errOpenFilesLimit) {
		t.Fatalf("reconcile past the open-files limit: %v, want errOpenFilesLimit", err)
	}
	if got := len(b.partitionList()); got != 2 {
		t.Fatalf("%d replicas open, want the 2 the limit leaves room for", got)
	}
	if b.dirOffline() {
		t.Fatal("the open-files limit took the log directory offline")
	}
	for _, p := range b.partitionList() {
		if !p.core.IsLeader() {
			t.Fatalf("%s, opened within the limit, does not lead", p.name())
		}
	}
	limit = 2000
	reconcileCreatesAll(t, b, im, 5)
}

// TestOutOfDescriptorsOpeningAReplica: an open that fails with EMFILE
// leaves that replica closed, with an error naming the open-files limit,
// takes no log directory offline and opens the others; the next reconcile
// opens it from what the failed one left.
func TestOutOfDescriptorsOpeningAReplica(t *testing.T) {
	fs := memWithLogDir(t)
	b := newUnitBroker(t, fs)
	fs.SetFault(func(op vfs.Op, path string) error {
		if op == vfs.OpOpen && strings.HasSuffix(path, "created-1/00000000000000000000.log") {
			return syscall.EMFILE
		}
		return nil
	})
	im := createImage(t, 3)
	err := reconcileOn(b, im)
	fs.SetFault(nil)
	if !errors.Is(err, errOpenFilesLimit) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("reconcile whose open ran out of descriptors: %v, want errOpenFilesLimit and EMFILE", err)
	}
	if b.dirOffline() {
		t.Fatal("EMFILE took the log directory offline")
	}
	topic, _ := im.Topic("created")
	if b.partition(topic.ID, 1) != nil {
		t.Fatal("the replica whose open failed is open")
	}
	for _, i := range []int32{0, 2} {
		if p := b.partition(topic.ID, i); p == nil || !p.core.IsLeader() {
			t.Fatalf("partition %d not open and leading beside the one that ran out of descriptors", i)
		}
	}
	reconcileCreatesAll(t, b, im, 3)
}

// TestOutOfDescriptorsReadingPartitionMetadataKeepsTheLog: a
// partition.metadata that cannot be read (EMFILE) is no evidence that its
// directory belongs to another topic incarnation: the directory, and the
// records in it, are kept, and the replica opens from it once the read
// works.
func TestOutOfDescriptorsReadingPartitionMetadataKeepsTheLog(t *testing.T) {
	fs := memWithLogDir(t)
	b := newUnitBroker(t, fs)
	im := createImage(t, 1)
	if err := reconcileOn(b, im); err != nil {
		t.Fatal(err)
	}
	topic, _ := im.Topic("created")
	p := b.partition(topic.ID, 0)
	dir := p.log.Dir()
	// A file of the log's own, to see the directory is the same one.
	kept := dir + "/kept"
	f, err := vfs.Create(fs, kept)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	closeAll(t, b)

	restarted := newUnitBroker(t, fs)
	fs.SetFault(func(op vfs.Op, path string) error {
		if op == vfs.OpOpen && strings.HasSuffix(path, partitionMetadataFile) {
			return syscall.EMFILE
		}
		return nil
	})
	err = reconcileOn(restarted, im)
	fs.SetFault(nil)
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("reconcile that could not read partition.metadata: %v, want EMFILE", err)
	}
	if ok, _ := vfs.Exists(fs, kept); !ok {
		t.Fatal("the partition's directory was removed because its partition.metadata could not be read")
	}
	if err := reconcileOn(restarted, im); err != nil {
		t.Fatal(err)
	}
	if p := restarted.partition(topic.ID, 0); p == nil || p.log.Dir() != dir {
		t.Fatalf("replica not reopened from %s", dir)
	}
	if ok, _ := vfs.Exists(fs, kept); !ok {
		t.Fatal("the partition's directory was replaced")
	}
	closeAll(t, restarted)
}

// TestOpenFilesCountedRarelyFarFromTheLimit: counting the process's
// descriptors is costly, so far from the limit a reconcile that opens
// replicas uses the last count plus the replicas opened since, and counts
// again only once that count is fdRecount old or the estimate nears the
// limit.
func TestOpenFilesCountedRarelyFarFromTheLimit(t *testing.T) {
	fs := memWithLogDir(t)
	b := newUnitBroker(t, fs)
	counts, limit := 0, 1_000_000
	b.openFiles = func() (int, int, bool) {
		counts++
		return 100 + len(b.partitionList()), limit, true
	}
	if err := reconcileOn(b, createImage(t, 3)); err != nil {
		t.Fatal(err)
	}
	if err := reconcileOn(b, createImage(t, 6)); err != nil {
		t.Fatal(err)
	}
	if counts != 1 {
		t.Fatalf("two reconciles far from the limit counted the open files %d times, want 1", counts)
	}
	if open, _, _ := b.openFilesEstimate(b.fdCount.at, len(b.partitionList()), 0); open != 106 {
		t.Fatalf("estimate %d open files, want the count's 100 plus 6 replicas opened since", open)
	}
	b.fdCount.at = b.fdCount.at.Add(-fdRecount)
	if err := reconcileOn(b, createImage(t, 7)); err != nil {
		t.Fatal(err)
	}
	if counts != 2 {
		t.Fatalf("a reconcile after a count %v old counted %d times in all, want 2", fdRecount, counts)
	}
	// Near the limit every reconcile counts: as if the last count had
	// found a limit of 600, whose reserve (256) twice over leaves room
	// for no more than 88 open files.
	limit = 1000
	b.fdCount.limit = 600
	if err := reconcileOn(b, createImage(t, 8)); err != nil {
		t.Fatal(err)
	}
	if counts != 3 {
		t.Fatalf("a reconcile near the limit counted %d times in all, want 3", counts)
	}
	closeAll(t, b)
}
