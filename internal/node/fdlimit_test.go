package node

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/vfs"
)

// TestOpenFilesLimitLeavesReplicasClosed: a reconcile opens new replicas
// only while descriptorReserve descriptors stay free; the others stay
// closed, reported with errOpenFilesLimit (no log directory goes offline),
// answer KAFKA_STORAGE_ERROR (a replica not opened yet answers
// NOT_LEADER_OR_FOLLOWER), are counted by the gauge, and open and are
// served at a later reconcile once the limit leaves room.
func TestOpenFilesLimitLeavesReplicasClosed(t *testing.T) {
	fs := memWithLogDir(t)
	b := newUnitBroker(t, fs)
	limit := 1000
	// Room for 2 new replicas: 742 open + 256 kept free (the reserve of a
	// limit of 1,000), each replica open holding one more.
	b.openFiles = func() (int, int, bool) { return 742 + len(b.partitionList()), limit, true }
	im := createImage(t, 5)
	topic, _ := im.Topic("created")
	// Named by the image, not reconciled yet: not open, but not offline.
	b.image.Store(im)
	if err := produceTo(b, topic.ID, 3); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("produce to a replica not reconciled yet: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
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
	// created-2..4 (name order) are offline here.
	if got := (clusterView{b}).PartitionHealth().OpenFilesLimitOffline; got != 3 {
		t.Fatalf("gauge of replicas closed for the open-files limit: %d, want 3", got)
	}
	checkOfflineForFiles(t, b, topic.ID, 2)

	limit = 2000
	if err := reconcileOn(b, im); err != nil {
		t.Fatalf("reconcile within the raised limit: %v", err)
	}
	checkCreated(t, b, 5)
	if got := (clusterView{b}).PartitionHealth().OpenFilesLimitOffline; got != 0 {
		t.Fatalf("gauge of replicas closed for the open-files limit: %d once all opened, want 0", got)
	}
	if err := produceTo(b, topic.ID, 0); err != nil {
		t.Fatalf("produce to a replica open within the limit: %v", err)
	}
	if err := produceTo(b, topic.ID, 3); err != nil {
		t.Fatalf("produce to the replica opened once the limit was raised: %v", err)
	}
	res := fetchFrom(b, topic.ID, 3)
	if res.Err != nil || res.HighWatermark != 1 || len(res.Records) == 0 {
		t.Fatalf("fetch of the replica opened once the limit was raised: err %v, high watermark %d, %d bytes; want its record", res.Err, res.HighWatermark, len(res.Records))
	}
	closeAll(t, b)
}

// TestOpenFilesLimitClosedReplicaDeletedOrMoved: a replica closed for the
// open-files limit stops being reported once the metadata no longer
// assigns it here: reassigned to another broker it answers
// NOT_LEADER_OR_FOLLOWER, its topic deleted UNKNOWN_TOPIC_OR_PARTITION,
// and the gauge drops to 0.
func TestOpenFilesLimitClosedReplicaDeletedOrMoved(t *testing.T) {
	fs := memWithLogDir(t)
	b := newUnitBroker(t, fs)
	// Room for 2 of the 5 (as above), whatever reconciles follow.
	b.openFiles = func() (int, int, bool) { return 742 + len(b.partitionList()), 1000, true }
	im := createImage(t, 5)
	topic, _ := im.Topic("created")
	if err := reconcileOn(b, im); !errors.Is(err, errOpenFilesLimit) {
		t.Fatalf("reconcile past the open-files limit: %v, want errOpenFilesLimit", err)
	}
	checkOfflineForFiles(t, b, topic.ID, 2)

	// created-3 and created-4 move to broker 2; created-2 stays closed
	// here.
	away := []int32{2}
	leader := int32(2)
	im, err := im.Apply(
		metadata.RegisterBroker{Broker: metadata.Broker{ID: 2, Epoch: 7,
			Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9093}}}},
		metadata.PartitionChange{TopicID: topic.ID, Partition: 3, Replicas: &away, ISR: &away, Leader: &leader},
		metadata.PartitionChange{TopicID: topic.ID, Partition: 4, Replicas: &away, ISR: &away, Leader: &leader},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := reconcileOn(b, im); !errors.Is(err, errOpenFilesLimit) {
		t.Fatalf("reconcile with created-2 still past the limit: %v, want errOpenFilesLimit", err)
	}
	if got := (clusterView{b}).PartitionHealth().OpenFilesLimitOffline; got != 1 {
		t.Fatalf("gauge after two of three closed replicas moved away: %d, want 1", got)
	}
	for _, i := range []int32{3, 4} {
		if err := produceTo(b, topic.ID, i); !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("produce to created-%d, moved away: %v, want NOT_LEADER_OR_FOLLOWER", i, err)
		}
	}
	if err := produceTo(b, topic.ID, 2); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce to created-2, still closed here: %v, want KAFKA_STORAGE_ERROR", err)
	}

	if im, err = im.Apply(metadata.RemoveTopic{ID: topic.ID}); err != nil {
		t.Fatal(err)
	}
	if err := reconcileOn(b, im); err != nil {
		t.Fatalf("reconcile of the deletion: %v", err)
	}
	if got := (clusterView{b}).PartitionHealth().OpenFilesLimitOffline; got != 0 {
		t.Fatalf("gauge after the topic was deleted: %d, want 0", got)
	}
	if b.closedForOpenFiles(partKey{topic.ID, 2}) {
		t.Fatal("created-2 is still reported closed for the open-files limit after its topic was deleted")
	}
	if err := produceTo(b, topic.ID, 2); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("produce to the deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	closeAll(t, b)
}

// checkOfflineForFiles checks that partitions from..4 of createImage's
// topic, closed for the open-files limit, answer KAFKA_STORAGE_ERROR to
// Produce, Fetch, ListOffsets, OffsetForLeaderEpoch and DescribeProducers.
func checkOfflineForFiles(t *testing.T, b *Broker, id metadata.TopicID, from int32) {
	t.Helper()
	x := backend{b}
	for i := from; i < 5; i++ {
		if b.partition(id, i) != nil {
			t.Fatalf("created-%d is open", i)
		}
		if err := produceTo(b, id, i); !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("produce to created-%d, closed for the open-files limit: %v, want KAFKA_STORAGE_ERROR", i, err)
		}
		if res := fetchFrom(b, id, i); !errors.Is(res.Err, kerr.KafkaStorageError) {
			t.Fatalf("fetch of created-%d: %v, want KAFKA_STORAGE_ERROR", i, res.Err)
		}
		if _, err := x.ListOffset(id, i, -1, 0); !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("list offsets of created-%d: %v, want KAFKA_STORAGE_ERROR", i, err)
		}
		if _, _, err := x.EpochEndOffset(id, i, -1, 0); !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("offset for leader epoch of created-%d: %v, want KAFKA_STORAGE_ERROR", i, err)
		}
		if _, err := x.DescribeProducers(id, i); !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("describe producers of created-%d: %v, want KAFKA_STORAGE_ERROR", i, err)
		}
		if code := api.ErrorCode(fetchFrom(b, id, i).Err); code != 56 {
			t.Fatalf("fetch of created-%d answers code %d, want 56 (KAFKA_STORAGE_ERROR)", i, code)
		}
	}
}

// produceTo produces one record to partition index of id with acks=1 and
// returns the answer's error.
func produceTo(b *Broker, id metadata.TopicID, index int32) error {
	done := make(chan api.ProduceResult, 1)
	backend{b}.Produce(api.ProduceParams{Topic: id, Partition: index, Acks: 1, Timeout: 5 * time.Second,
		Batches: [][]byte{batch.BuildProducer([][]byte{[]byte("r")}, time.Now().UnixMilli(), -1, -1, -1)}},
		func(res api.ProduceResult) { done <- res })
	return (<-done).Err
}

// fetchFrom is a consumer's fetch of partition index of id from offset 0.
func fetchFrom(b *Broker, id metadata.TopicID, index int32) api.FetchResult {
	done := make(chan []api.FetchResult, 1)
	backend{b}.Fetch(api.FetchParams{ReplicaID: -1, MaxBytes: 1 << 20,
		Partitions: []api.FetchPartition{{Topic: id, Partition: index, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}},
		func(res []api.FetchResult) { done <- res })
	return (<-done)[0]
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
	if err := produceTo(b, topic.ID, 1); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce to the replica whose open ran out of descriptors: %v, want KAFKA_STORAGE_ERROR", err)
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

// TestReplicaCapacity: what a broker tells the controller it can keep
// open, the limit less the reserve and the files it holds besides its
// replicas', over log.open.files.per.replica.
func TestReplicaCapacity(t *testing.T) {
	for _, tt := range []struct {
		name                       string
		open, limit, replicas, per int
		ok                         bool
		want                       int32
	}{
		// The benchmark's brokers: 20,000, 2,000 kept free, 22 other files.
		{"fresh at 20,000", 22, 20_000, 0, 1, true, 17_978},
		{"restarted with its replicas open", 17_022, 20_000, 17_000, 1, true, 17_978},
		// Segments beyond the first count as other files.
		// 40,000: 2,048 kept free.
		{"replicas of several segments", 20_022, 40_000, 10_000, 1, true, 40_000 - 2_048 - 10_022},
		{"two files each", 22, 20_000, 0, 2, true, 8_989},
		{"more files per replica than they hold", 1_000, 20_000, 1_000, 5, true, 3_600},
		// 1,000: 256 kept free.
		{"small limit", 100, 1_000, 0, 1, true, 644},
		{"no room left", 900, 1_000, 0, 1, true, 1},
		{"limit not known", 0, 0, 0, 1, false, 0},
		{"not stated", 22, 20_000, 0, 0, true, 0},
	} {
		if got := replicaCapacity(tt.open, tt.limit, tt.replicas, tt.per, tt.ok); got != tt.want {
			t.Errorf("%s: replicaCapacity(%d, %d, %d, %d) = %d, want %d", tt.name, tt.open, tt.limit, tt.replicas, tt.per, got, tt.want)
		}
	}
}
