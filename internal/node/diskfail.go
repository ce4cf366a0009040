package node

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/replica"
)

// A broker whose disk fails hands over instead of lingering.
//
// A partition log that cannot be written or fsynced (EIO, EFBIG from
// RLIMIT_FSIZE, any failed fsync) takes its whole log directory offline, as Kafka does
// (KIP-112): a full or broken disk affects every partition on it. Kafka's
// KRaft brokers keep serving their other directories only with KIP-858
// directory assignment, which tells the controller which directory holds
// each replica; our metadata has no such assignment, so a broker with an
// offline directory does what KRaft brokers without it (Kafka 3.3-3.6) and
// every broker with a single log directory (the common case: it hosts
// nothing any more) do: it stops. It stops through the controlled-shutdown
// path, so the controller takes it out of every ISR (the last member goes
// to the ELR, KIP-966) and elects new leaders from the rest of the ISR
// before it goes, then the process exits non-zero. Until then the
// partitions of the offline directory answer KAFKA_STORAGE_ERROR to
// produces and fetches, and no replica is created there. A restart with a
// healthy disk brings the directory back: the broker registers again and
// its replicas catch up and rejoin the ISRs.
//
// The metadata log (the raft log of a controller) is different: a node
// whose metadata log cannot be written has lost its vote and its view of
// the cluster, so it halts at once, as Kafka halts when its metadata log
// directory fails; its sessions close and the controller fences it.

// ErrLogDirOffline is the fatal error of a broker that stopped because a
// log directory failed.
var ErrLogDirOffline = errors.New("log directory offline")

// ErrMetadataLogFailed is the fatal error of a node that halted because
// its metadata log could not be written.
var ErrMetadataLogFailed = errors.New("metadata log failed")

// Fatal delivers, at most once, the error for which the node stopped by
// itself (a failed log directory or metadata log). `skein server` exits
// with it; tests observe it. It is never sent after Close or Halt.
func (b *Broker) Fatal() <-chan error { return b.fatal }

// isDeviceError reports an error of the device itself. Opening a log
// fails for many reasons (damage it cannot repair, a foreign directory);
// only these say the disk is gone or full.
func isDeviceError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC, syscall.EFBIG, syscall.EDQUOT, syscall.EROFS} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// logDirFailed takes the log directory holding p offline and starts the
// broker's stop. It only records and spawns, so it may be called with
// p.mu held.
func (b *Broker) logDirFailed(p *partition, err error) {
	b.takeLogDirOffline(filepath.Dir(p.log.Dir()), p.name(), err)
}

// takeLogDirOffline takes log directory dir offline after a failure found
// while working on partition name, and starts the broker's stop. Only the
// first failure counts: the broker is stopping from then on.
func (b *Broker) takeLogDirOffline(dir, name string, err error) {
	if !b.offlineDir.CompareAndSwap(nil, &dir) {
		return
	}
	b.metrics.LogDirOffline()
	if isOutOfDescriptors(err) {
		// A running log that could not open a file has failed all the
		// same (its writes are refused until it is reopened), as Kafka
		// takes a log directory offline on "Too many open files"; the
		// reconcile's reserve keeps replicas from getting here, but the
		// operator must know the cause is the limit, not the disk.
		_, limit, _ := b.openFiles()
		b.log.Error("log directory failed: this process ran out of file descriptors, not a disk failure; it goes offline and this broker hands its partitions over and stops; raise the open-files limit (ulimit -n; LimitNOFILE= in a systemd unit) and restart it",
			"dir", dir, "partition", name, "open_files_limit", limit, "err", err)
	} else {
		b.log.Error("log directory failed: it goes offline and this broker hands its partitions over and stops; restart it with a healthy disk",
			"dir", dir, "partition", name, "err", err)
	}
	go func() {
		for _, q := range b.partitionList() {
			if filepath.Dir(q.log.Dir()) == dir {
				q.setOffline(err)
			}
		}
		b.stopFatally(fmt.Errorf("%w: %s: %w", ErrLogDirOffline, dir, err), true)
	}()
}

// dirOffline reports whether a log directory failed on this broker.
func (b *Broker) dirOffline() bool { return b.offlineDir.Load() != nil }

// watchMetadataLog halts the node when its quorum member stops on a
// storage error, rather than leaving a broker running without metadata.
func (b *Broker) watchMetadataLog() {
	defer b.bgWG.Done()
	select {
	case <-b.stop:
		return
	case <-b.quorum.Done():
	}
	err := b.quorum.Err()
	if err == nil {
		return
	}
	select {
	case <-b.stop: // stopping anyway
		return
	default:
	}
	b.log.Error("metadata log failed: halting this node", "dir", filepath.Join(b.cfg.LogDirs[0], metadataDirName), "err", err)
	// Not on this goroutine: Halt waits for it.
	go b.stopFatally(fmt.Errorf("%w: %w", ErrMetadataLogFailed, err), false)
}

// stopFatally stops the node (through a controlled shutdown if clean,
// else as a crash would) and then reports err on Fatal. A Close or Halt
// that came first wins: the node was being stopped anyway.
func (b *Broker) stopFatally(err error, clean bool) {
	first := false
	b.stopOnce.Do(func() {
		first = true
		if clean {
			b.closeOnce()
		} else {
			b.haltOnce()
		}
	})
	if first {
		b.fatal <- err // buffered, sent once: only the first stop gets here
	}
}

// handoverWait bounds how long a storage error answer waits for the
// handover (the controller's move of this broker's leaderships): as long
// as a Metadata answer waits for a suspect leader's fencing (suspects.go).
const handoverWait = 2 * time.Second

// answerAfterHandover answers a produce to p that failed with storageErr
// once the handover of the failed log directory's partitions is done (at
// most handoverWait). By then the image names p's new leader, so the
// answer is NOT_LEADER_OR_FOLLOWER with that leader (KIP-951) and the
// client moves at once; KAFKA_STORAGE_ERROR only sends it to a metadata
// refresh, which clients like franz-go space out (5 s minimum age), and a
// refresh racing the handover would still name this broker. If p still
// leads here when the wait ends, or there is nothing to hand over (a
// single broker), the storage error stands. Either way the answer is held
// from this call on, so the broker's stop, which the failure starts,
// sends it before the connections close (a single broker used to close
// them first now and then, and the client saw a dropped connection
// instead of the error). Never blocks the caller; may be called with p.mu
// held.
func (b *Broker) answerAfterHandover(p *partition, storageErr error, answer func(error)) {
	if !b.holdHandoverAnswer() {
		go answer(storageErr) // like any other completion: never under a lock
		return
	}
	go func() {
		defer b.handoverAnswers.Done()
		if !b.dirOffline() || !b.canHandOver() {
			answer(storageErr)
			return
		}
		t := time.NewTimer(handoverWait)
		defer t.Stop()
		select {
		case <-b.shutdownOK:
		case <-b.shutdownUnreachable:
		case <-b.stop:
		case <-t.C:
		}
		if p.ledHereInImage() {
			answer(storageErr)
			return
		}
		answer(kerr.NotLeaderForPartition)
	}()
}

// holdHandoverAnswer counts one more answer held for the handover, unless
// the broker already waited for them (then it answers at once).
func (b *Broker) holdHandoverAnswer() bool {
	b.handoverMu.Lock()
	defer b.handoverMu.Unlock()
	if b.handoverClosed {
		return false
	}
	b.handoverAnswers.Add(1)
	return true
}

// waitHandoverAnswers lets the answers held for the handover go out before
// the connections close; they are released by the end of the controlled
// shutdown at the latest. Later ones are not held.
func (b *Broker) waitHandoverAnswers() {
	b.handoverMu.Lock()
	b.handoverClosed = true
	b.handoverMu.Unlock()
	b.handoverAnswers.Wait()
}

// ledHereInImage reports whether the latest image names this broker as
// p's leader.
func (p *partition) ledHereInImage() bool {
	t, ok := p.b.Image().TopicByID(p.id)
	if !ok || int(p.index) >= len(t.Partitions) {
		return false
	}
	return t.Partitions[p.index].Leader == p.b.cfg.NodeID
}

// setOffline fences the partition when its log directory went offline:
// writes fail as after a failed fsync, and reads fail too (a failed disk
// is not read from), each with KAFKA_STORAGE_ERROR.
func (p *partition) setOffline(err error) {
	p.offline.Store(true)
	p.step(func(c *replica.Replica) replica.Ready { return c.SetOffline(err) })
}
