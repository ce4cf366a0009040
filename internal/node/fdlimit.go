package node

import (
	"errors"
	"syscall"
)

// A broker keeps every replica's segment files open (Kafka does the same),
// so the replicas it can hold are bounded by its open-files limit
// (RLIMIT_NOFILE). Running out of descriptors fails whatever needs one
// next: a replica's open, a checkpoint's temporary file, an accepted
// connection, and the metadata log's hard state (which halts the node, as
// any failed metadata-log write does). So a reconcile opens new replicas
// only while descriptorReserve of them stay free, and leaves the others
// closed, with an error naming the limit, to be tried again at the next
// reconcile; the replicas already open keep being served.

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
