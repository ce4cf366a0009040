package grouphost

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/group"
)

// Handle is a runtime's wrapper of one Host.
type Handle interface {
	// Do runs op with the Host and the time under the runtime's
	// serialisation and carries out the Ready it returns. An error from
	// op means there is nothing to carry out; Do returns it.
	Do(op func(h *Host, now int64) (Ready, error)) error
	// Writable is nil when the partition can take an acks=all write now.
	Writable() error
}

// Hosts finds the Handles of one broker.
type Hosts interface {
	// For is the Handle of a group's coordinator here, or the error a
	// client gets: NOT_COORDINATOR when another broker (or none) leads
	// the group's partition, COORDINATOR_LOAD_IN_PROGRESS while this
	// broker takes over.
	For(groupID string) (Handle, error)
	// All lists the Handles here; the error is
	// COORDINATOR_LOAD_IN_PROGRESS when a partition led here has none yet.
	All() ([]Handle, error)
	// EnsureOffsetsTopic is api.GroupBackend's.
	EnsureOffsetsTopic(done func(error))
	// ForPartition is the Handle of the coordinator of the
	// __consumer_offsets partition here, if this broker has one (loading
	// or not).
	ForPartition(partition int32) (Handle, bool)
}

// Backend is the api.GroupBackend of a broker: each request goes to the
// coordinator of its group's partition.
type Backend struct {
	Hosts Hosts
	// Fetched, if set, sees every OffsetFetch answer that is sent (the
	// simulator's checker).
	Fetched func(h Handle, groupID string, fetched []group.FetchedOffset)
}

var (
	_ api.GroupBackend          = Backend{}
	_ api.TxnCompletionListener = Backend{}
)

// writeTo is Do for requests whose purpose is to write (offset commits,
// deletions): when the partition cannot take an acks=all write now (its
// ISR is below min.insync.replicas) they are refused up front with
// COORDINATOR_NOT_AVAILABLE, as Kafka answers, instead of changing the
// coordinator's memory, failing the write and reloading the partition for
// every retry.
func writeTo(h Handle, fn func(c *group.Coordinator, now int64) group.Output, finish func(error)) error {
	if err := h.Writable(); err != nil {
		return fmt.Errorf("%w: the partition cannot take writes now: %v", kerr.CoordinatorNotAvailable, err)
	}
	return call(h, fn, finish)
}

func call(h Handle, fn func(c *group.Coordinator, now int64) group.Output, finish func(error)) error {
	return h.Do(func(host *Host, now int64) (Ready, error) { return host.Call(now, fn, finish) })
}

func read(h Handle, fn func(c *group.Coordinator)) error {
	return h.Do(func(host *Host, _ int64) (Ready, error) { return Ready{}, host.Read(fn) })
}

func (b Backend) EnsureOffsetsTopic(done func(error)) { b.Hosts.EnsureOffsetsTopic(done) }

func (b Backend) Join(req group.JoinRequest, done func(group.JoinResponse)) {
	fail := func(err error) { done(group.JoinResponse{Err: err, MemberID: req.MemberID, Generation: -1}) }
	h, err := b.Hosts.For(req.GroupID)
	if err == nil {
		err = h.Do(func(host *Host, now int64) (Ready, error) {
			return host.Call(now, func(c *group.Coordinator, now int64) group.Output {
				req.ID = host.parked.Join(req.MemberID, done)
				return c.Join(now, req)
			}, nil)
		})
	}
	if err != nil {
		fail(err)
	}
}

func (b Backend) Sync(req group.SyncRequest, done func(group.SyncResponse)) {
	h, err := b.Hosts.For(req.GroupID)
	if err == nil {
		err = h.Do(func(host *Host, now int64) (Ready, error) {
			return host.Call(now, func(c *group.Coordinator, now int64) group.Output {
				req.ID = host.parked.Sync(done)
				return c.Sync(now, req)
			}, nil)
		})
	}
	if err != nil {
		done(group.SyncResponse{Err: err})
	}
}

func (b Backend) Heartbeat(req group.HeartbeatRequest) error {
	h, err := b.Hosts.For(req.GroupID)
	if err != nil {
		return err
	}
	var hbErr error
	if err := call(h, func(c *group.Coordinator, now int64) group.Output {
		hbErr = c.Heartbeat(now, req)
		return group.Output{}
	}, nil); err != nil {
		return err
	}
	return hbErr
}

func (b Backend) Leave(req group.LeaveRequest, done func(group.LeaveResponse)) {
	h, err := b.Hosts.For(req.GroupID)
	if err == nil {
		var resp group.LeaveResponse
		err = call(h, func(c *group.Coordinator, now int64) group.Output {
			var out group.Output
			resp, out = c.Leave(now, req)
			return out
		}, func(err error) {
			if err != nil {
				resp = group.LeaveResponse{Err: err}
			}
			done(resp)
		})
	}
	if err != nil {
		done(group.LeaveResponse{Err: err})
	}
}

func (b Backend) CommitOffsets(req group.CommitRequest, done func([]group.PartitionError, error)) {
	b.commit(req.GroupID, func(c *group.Coordinator, now int64) ([]group.PartitionError, group.Output) {
		return c.CommitOffsets(now, req)
	}, done)
}

// commit runs an offset commit of groupID's coordinator and answers once
// its records are committed.
func (b Backend) commit(groupID string, fn func(c *group.Coordinator, now int64) ([]group.PartitionError, group.Output), done func([]group.PartitionError, error)) {
	h, err := b.Hosts.For(groupID)
	if err == nil {
		var results []group.PartitionError
		err = writeTo(h, func(c *group.Coordinator, now int64) group.Output {
			var out group.Output
			results, out = fn(c, now)
			return out
		}, func(err error) {
			if err != nil {
				results = nil
			}
			done(results, err)
		})
	}
	if err != nil {
		done(nil, err)
	}
}

// TxnCommitOffsets is CommitOffsets for TxnOffsetCommit: the offsets are
// written as a transactional batch of the request's producer and stay
// pending until its transaction ends (TxnCompleted).
func (b Backend) TxnCommitOffsets(req group.TxnCommitRequest, done func([]group.PartitionError, error)) {
	b.commit(req.GroupID, func(c *group.Coordinator, now int64) ([]group.PartitionError, group.Output) {
		return c.TxnCommitOffsets(now, req)
	}, done)
}

// TxnCompleted is api.TxnCompletionListener's: the producer's marker is
// committed on partition, so its pending offsets there are committed or
// dropped.
func (b Backend) TxnCompleted(partition int32, producerID int64, commit bool) {
	h, ok := b.Hosts.ForPartition(partition)
	if !ok {
		return // not the coordinator here: the one that loads replays the marker
	}
	_ = h.Do(func(host *Host, now int64) (Ready, error) { return host.TxnCompleted(now, producerID, commit), nil })
}

func (b Backend) FetchOffsets(groupID string, partitions []group.TopicPartition, done func([]group.FetchedOffset, error)) {
	h, err := b.Hosts.For(groupID)
	if err == nil {
		var fetched []group.FetchedOffset
		err = call(h, func(c *group.Coordinator, _ int64) group.Output {
			fetched = c.FetchOffsets(groupID, partitions)
			return group.Output{}
		}, func(err error) {
			if err != nil {
				done(nil, err)
				return
			}
			if b.Fetched != nil {
				b.Fetched(h, groupID, fetched)
			}
			done(fetched, nil)
		})
	}
	if err != nil {
		done(nil, err)
	}
}

func (b Backend) DescribeGroup(groupID string) (group.GroupDescription, error) {
	h, err := b.Hosts.For(groupID)
	if err != nil {
		return group.GroupDescription{GroupID: groupID, State: group.Dead}, err
	}
	var d group.GroupDescription
	if err := read(h, func(c *group.Coordinator) { d = c.DescribeGroup(groupID) }); err != nil {
		return group.GroupDescription{GroupID: groupID, State: group.Dead}, err
	}
	return d, nil
}

func (b Backend) ListGroups(states []group.State) ([]group.GroupListing, error) {
	hs, loadErr := b.Hosts.All()
	var out []group.GroupListing
	for _, h := range hs {
		if err := read(h, func(c *group.Coordinator) { out = append(out, c.ListGroups(states)...) }); errors.Is(err, kerr.CoordinatorLoadInProgress) {
			loadErr = err
		}
	}
	return out, loadErr
}

// DeleteGroups deletes the groups of each coordinator in one write, as
// Kafka does (the tombstones of every group of one __consumer_offsets
// partition go out together): one batch to replicate and wait for per
// coordinator, not per group, and the groups of one partition are gone
// together or not at all. The answer goes out once every coordinator's
// share is decided.
func (b Backend) DeleteGroups(groupIDs []string, done func([]error)) {
	errs := make([]error, len(groupIDs))
	var order []Handle
	byHost := map[Handle][]int{}
	for i, id := range groupIDs {
		if id == "" {
			errs[i] = kerr.InvalidGroupID
			continue
		}
		h, err := b.Hosts.For(id)
		if err != nil {
			errs[i] = err
			continue
		}
		if _, ok := byHost[h]; !ok {
			order = append(order, h)
		}
		byHost[h] = append(byHost[h], i)
	}
	// Shares complete on whatever goroutine their write completes on;
	// the last one sends the answer.
	var left atomic.Int32
	left.Store(int32(len(order)) + 1)
	shareDone := func() {
		if left.Add(-1) == 0 {
			done(errs)
		}
	}
	for _, h := range order {
		idx := byHost[h]
		ids := make([]string, len(idx))
		for j, i := range idx {
			ids[j] = groupIDs[i]
		}
		var results []error
		err := writeTo(h, func(c *group.Coordinator, _ int64) group.Output {
			var out group.Output
			results, out = c.DeleteGroups(ids)
			return out
		}, func(err error) {
			for j, i := range idx {
				if err != nil {
					errs[i] = err
				} else {
					errs[i] = results[j]
				}
			}
			shareDone()
		})
		if err != nil {
			for _, i := range idx {
				errs[i] = err
			}
			shareDone()
		}
	}
	shareDone()
}

func (b Backend) DeleteOffsets(groupID string, partitions []group.TopicPartition, done func(group.DeleteOffsetsResponse)) {
	h, err := b.Hosts.For(groupID)
	if err == nil {
		var resp group.DeleteOffsetsResponse
		err = writeTo(h, func(c *group.Coordinator, _ int64) group.Output {
			var out group.Output
			resp, out = c.DeleteOffsets(groupID, partitions)
			return out
		}, func(err error) {
			if err != nil {
				resp = group.DeleteOffsetsResponse{Err: err}
			}
			done(resp)
		})
	}
	if err != nil {
		done(group.DeleteOffsetsResponse{Err: err})
	}
}
