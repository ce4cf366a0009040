package node

import (
	"errors"
	"math"
	"syscall"
	"time"
)

// A broker keeps every replica's segment files open (Kafka does the same),
// so the replicas it can hold are bounded by its open-files limit
// (RLIMIT_NOFILE). Running out of descriptors fails whatever needs one
// next: a replica's open, a checkpoint's temporary file, an accepted
// connection, and the metadata log's hard state (which halts the node, as
// any failed metadata-log write does). So a reconcile opens new replicas
// only while descriptorReserve of them stay free, and leaves the others
// closed, with an error naming the limit, to be tried again at the next
// reconcile; the replicas already open keep being served. Until one opens
// them, the replicas left closed are offline here (closedForOpenFiles):
// requests for them are answered KAFKA_STORAGE_ERROR and the gauge
// skein_open_files_limit_offline_replicas counts them. The controller is
// not told of these (Kafka's brokers report offline replicas to it,
// KIP-858): it may keep such a replica as leader or in the ISR.

// The controller is told, at registration, how many replicas this broker
// can keep open (replicaCapacity), and places no more on it: a creation
// that would is refused (controller.checkReplicaCapacity), so the closed
// replicas above are what something else's descriptors cost, not what
// the cluster was asked to create.

// replicaCapacity is how many replicas a broker with open descriptors
// open (replicas of them its replicas', at perReplica each) and a soft
// open-files limit of limit can keep open: the limit less
// descriptorReserve and the descriptors it holds besides its replicas',
// over perReplica (log.open.files.per.replica); at least 1. 0 (not
// limited) when perReplica is 0 or the limit is not known (ok false).
func replicaCapacity(open, limit, replicas, perReplica int, ok bool) int32 {
	if !ok || perReplica <= 0 || limit <= 0 {
		return 0
	}
	other := max(open-replicas*perReplica, 0)
	n := (limit - descriptorReserve(limit) - other) / perReplica
	return int32(min(max(n, 1), math.MaxInt32))
}

// errOpenFilesLimit marks replicas left closed for the open-files limit.
var errOpenFilesLimit = errors.New("the open-files limit (RLIMIT_NOFILE) is reached: raise it (ulimit -n; LimitNOFILE= in a systemd unit) above the replicas' segment files plus the connections")

// isOutOfDescriptors reports an error of a process (EMFILE) or system
// (ENFILE) out of file descriptors: not a failure of the disk.
func isOutOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// descriptorReserve is how many descriptors a reconcile leaves free when it
// opens replicas: for the metadata log, connections, the checkpoint files
// of leadership changes and the reconcile's own parallel opens
// (maxParallelOpens at a time, a few files each).
func descriptorReserve(limit int) int { return min(max(limit/10, 256), 2048) }

// openFilesFunc reports the descriptors the process has open and its soft
// open-files limit; ok is false where they cannot be read.
type openFilesFunc func() (open, limit int, ok bool)

// fdRecount is how old a count of open files may get before a reconcile
// that opens replicas counts again although its estimate is far from the
// limit.
const fdRecount = 10 * time.Second

// fdCount is a count of the process's open files and the replicas open
// when it was taken.
type fdCount struct {
	open, limit int
	replicas    int
	at          time.Time
}

// openFilesEstimate returns how many descriptors the process has open, for
// a reconcile about to open need more replicas with replicas open now.
// Counting them (/proc/self/fd) costs the kernel about 5 us per descriptor
// (100 ms at 18,000, at the load of this sitting), too much for every
// reconcile of a creation: far from the limit the last count, plus one per
// replica opened since, stands in for it for up to fdRecount; near it
// (within twice the reserve) every reconcile counts.
func (b *Broker) openFilesEstimate(now time.Time, replicas, need int) (open, limit int, ok bool) {
	c := &b.fdCount
	est := c.open + replicas - c.replicas
	if !c.at.IsZero() && now.Sub(c.at) < fdRecount && est+need <= c.limit-2*descriptorReserve(c.limit) {
		return max(est, 0), c.limit, true
	}
	if open, limit, ok = b.openFiles(); !ok {
		return 0, 0, false
	}
	*c = fdCount{open: open, limit: limit, replicas: replicas, at: now}
	return open, limit, true
}

// closedForOpenFiles reports whether a reconcile left the replica k
// closed for the open-files limit (brokerPartitions.closedForFiles).
func (b *Broker) closedForOpenFiles(k partKey) bool {
	b.partsMu.RLock()
	defer b.partsMu.RUnlock()
	_, ok := b.closedForFiles[k]
	return ok
}

// closedForOpenFilesCount is how many replicas are closed for the
// open-files limit, for the metrics.
func (b *Broker) closedForOpenFilesCount() int {
	b.partsMu.RLock()
	defer b.partsMu.RUnlock()
	return len(b.closedForFiles)
}
