package node

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/vfs"
)

// errPowerCut fails every filesystem call after a simulated power cut.
var errPowerCut = errors.New("the machine lost power")

// createImage is an image in which broker 1 (registered at epoch 5) holds
// and leads every one of n partitions of topic "created".
func createImage(t *testing.T, n int) *metadata.Image {
	t.Helper()
	parts := make([]metadata.Partition, n)
	for i := range parts {
		parts[i] = metadata.Partition{Index: int32(i), Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}
	}
	im, err := metadata.Empty("unit-test").Apply(
		metadata.RegisterBroker{Broker: metadata.Broker{ID: 1, Epoch: 5,
			Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}}},
		metadata.CreateTopic{Name: "created", ID: metadata.TopicID{9, 15: 1}, Partitions: parts},
	)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// memWithLogDir is a Mem holding the unit broker's log directory, /data,
// durably, as a broker's start leaves it.
func memWithLogDir(t *testing.T) *vfs.Mem {
	t.Helper()
	fs := vfs.NewMem()
	if err := vfs.MkdirAllDurably(fs, "/data"); err != nil {
		t.Fatal(err)
	}
	return fs
}

// reconcileOn reconciles im on b, broker 1 registered at epoch 5.
func reconcileOn(b *Broker, im *metadata.Image) error {
	b.brokerEpoch.Store(5)
	b.image.Store(im)
	return b.reconcilePartitions()
}

// TestCreateReplicasPowerCut cuts the power at each filesystem call of a
// reconcile that creates replicas, up to and including the syncfs that
// makes them durable (createPartitionDir and storage.Options.Fresh write
// without fsyncs), torn writes included. Before that syncfs has returned no
// replica may be registered (and so none applied, led or written to); the
// next start must open every replica from whatever the cut left (no
// directory, one without partition.metadata or with a torn one, no
// segment or an empty one), lead it with an empty log, and a power cut
// after that reconcile must lose none of what it created.
func TestCreateReplicasPowerCut(t *testing.T) {
	const n = 6
	im := createImage(t, n)
	for cut := 1; ; cut++ {
		fs := memWithLogDir(t)
		b := newUnitBroker(t, fs)
		// The reconcile creates replicas on several goroutines, so the
		// fault's counters are shared between them.
		var mu sync.Mutex
		calls, synced, crashed := 0, false, false
		fs.SetFault(func(op vfs.Op, path string) error {
			mu.Lock()
			defer mu.Unlock()
			if crashed {
				return errPowerCut
			}
			if synced {
				return nil // past the window: the cluster's usual writes
			}
			if calls++; calls < cut {
				if op == vfs.OpSyncFS {
					synced = true
				}
				return nil
			}
			crashed = true
			fs.Crash(vfs.CrashOptions{TornWrites: true, Seed: uint64(cut)})
			return errPowerCut
		})
		err := reconcileOn(b, im)
		fs.SetFault(nil)
		mu.Lock()
		cutHappened := crashed
		mu.Unlock()
		if !cutHappened {
			if err != nil {
				t.Fatalf("reconcile without a power cut: %v", err)
			}
			closeAll(t, b)
			if cut < 10 {
				t.Fatalf("the creation made only %d filesystem calls before its syncfs", cut-1)
			}
			return // every call of the window was cut once
		}
		t.Run(fmt.Sprintf("cut=%d", cut), func(t *testing.T) {
			if err == nil {
				t.Fatal("a reconcile whose filesystem lost power reported no error")
			}
			if got := len(b.partitionList()); got != 0 {
				t.Fatalf("%d replicas registered although their creation was never made durable", got)
			}
			restarted := newUnitBroker(t, fs)
			if err := reconcileOn(restarted, im); err != nil {
				t.Fatalf("reconcile after the power cut: %v", err)
			}
			checkCreated(t, restarted, n)
			var dirs []string
			for _, p := range restarted.partitionList() {
				dirs = append(dirs, p.log.Dir())
			}
			closeAll(t, restarted)
			// What the successful reconcile created survives a power
			// cut with no sync after it.
			fs.Crash(vfs.CrashOptions{TornWrites: true, Seed: uint64(cut) + 1000})
			for _, dir := range dirs {
				checkOnDisk(t, restarted, dir)
			}
			reconcileCreatesAll(t, newUnitBroker(t, fs), im, n)
		})
	}
}

// TestCreateReplicasSyncFSFails: a syncfs that fails with a device error
// after the replicas were created leaves none of them registered, takes
// the log directory offline, and the replicas open from what is on disk
// at the next start.
func TestCreateReplicasSyncFSFails(t *testing.T) {
	fs := memWithLogDir(t)
	b := newUnitBroker(t, fs)
	fs.SetFault(func(op vfs.Op, path string) error {
		if op == vfs.OpSyncFS {
			return syscall.EIO
		}
		return nil
	})
	im := createImage(t, 3)
	if err := reconcileOn(b, im); err == nil {
		t.Fatal("reconcile reported no error although its syncfs failed")
	}
	fs.SetFault(nil)
	if got := len(b.partitionList()); got != 0 {
		t.Fatalf("%d replicas registered although their syncfs failed", got)
	}
	if !b.dirOffline() {
		t.Fatal("an EIO of the syncfs did not take the log directory offline")
	}
	reconcileCreatesAll(t, newUnitBroker(t, fs), im, 3)
}

// reconcileCreatesAll reconciles im (createImage's of n partitions) on b,
// checks it opened and leads all of them (checkCreated), and closes them.
func reconcileCreatesAll(t *testing.T, b *Broker, im *metadata.Image, n int) {
	t.Helper()
	if err := reconcileOn(b, im); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	checkCreated(t, b, n)
	closeAll(t, b)
}

// checkCreated checks that b holds and leads every one of the n partitions
// of createImage, each empty, in a directory whose partition.metadata names
// the topic, with its segment file and leader-epoch checkpoint on disk.
func checkCreated(t *testing.T, b *Broker, n int) {
	t.Helper()
	im := b.Image()
	topic, _ := im.Topic("created")
	for i := range n {
		p := b.partition(topic.ID, int32(i))
		if p == nil {
			t.Fatalf("partition %d not open", i)
		}
		if !p.core.IsLeader() {
			t.Fatalf("partition %d does not lead", i)
		}
		if end := p.log.LogEndOffset(); end != 0 {
			t.Fatalf("partition %d: log end %d, want 0", i, end)
		}
		checkOnDisk(t, b, p.log.Dir())
	}
}

// checkOnDisk checks that dir holds a partition of createImage's topic:
// partition.metadata naming it, the segment file and the leader-epoch
// checkpoint.
func checkOnDisk(t *testing.T, b *Broker, dir string) {
	t.Helper()
	topic, _ := b.Image().Topic("created")
	id, err := b.readPartitionTopicID(dir)
	if err != nil || id != topic.ID {
		t.Fatalf("%s: partition.metadata names %v (%v), want %v", dir, id, err, topic.ID)
	}
	for _, name := range []string{"00000000000000000000.log", "leader-epoch-checkpoint"} {
		if ok, err := vfs.Exists(b.fs, filepath.Join(dir, name)); !ok || err != nil {
			t.Fatalf("%s: %s missing (%v)", dir, name, err)
		}
	}
}

// closeAll closes every replica of b.
func closeAll(t *testing.T, b *Broker) {
	t.Helper()
	for _, p := range b.partitionList() {
		if err := p.close(); err != nil {
			t.Fatal(err)
		}
	}
}
