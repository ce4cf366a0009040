package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/verify"
)

// Group member bounds. The session is Kafka's smallest allowed by default
// (group.min.session.timeout.ms), so a member cut off by a fault is
// declared dead, and its partitions handed over, within the run.
const (
	groupSessionTimeout   = 6 * time.Second
	groupHeartbeat        = 1 * time.Second
	groupRebalanceTimeout = 15 * time.Second
	// groupCommitTimeout bounds one commit; a commit that times out is
	// recorded as failed (it may still have been applied).
	groupCommitTimeout = 10 * time.Second
)

// groupProgressID keys the group's progress (any member's reads) in a
// progress tracker; assigned consumers are numbered from 1.
const groupProgressID = 0

// runGroupMember consumes the topic as member id of group cfg.Group until
// ctx ends: cooperative-sticky assignment, offsets committed explicitly
// after each poll is recorded. Rebalances wait while a poll is being
// recorded and committed (BlockRebalanceOnPoll), so a partition changes
// hands only at a commit the history holds: the next owner must resume
// there or earlier.
func runGroupMember(ctx context.Context, id int, cfg *Config, seeds []string, rec *recorder, prog *progress, extra ...kgo.Opt) error {
	changed := func(typ verify.EventType, note string) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
			ps := slices.Sorted(slices.Values(parts[cfg.Topic]))
			if len(ps) > 0 {
				rec.add(verify.Event{Type: typ, Consumer: id, Group: cfg.Group, Partitions: ps, Note: note})
			}
		}
	}
	opts := append(cfg.clientOpts(seeds), kgo.ConsumerGroup(cfg.Group), kgo.ConsumeTopics(cfg.Topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(groupSessionTimeout), kgo.HeartbeatInterval(groupHeartbeat), kgo.RebalanceTimeout(groupRebalanceTimeout),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(changed(verify.EventAssign, "assigned")),
		kgo.OnPartitionsRevoked(changed(verify.EventRevoke, "revoked")),
		kgo.OnPartitionsLost(changed(verify.EventRevoke, "lost")))
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return fmt.Errorf("group member %d: %w", id, err)
	}
	defer cl.Close()
	var poll int64
	for ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, pollMaxRecords)
		now := time.Now()
		errs := pollErrors(fetches)
		records := fetches.Records()
		if len(records) > 0 || len(errs) > 0 {
			poll++
			rec.addAt(now, verify.Event{Type: verify.EventPoll, Consumer: id, Group: cfg.Group, Poll: poll, Err: strings.Join(errs, "; ")})
			for _, r := range records {
				rec.addAt(now, verify.Event{Type: verify.EventRead, Consumer: id, Group: cfg.Group, Poll: poll, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
				prog.advance(groupProgressID, r.Partition, r.Offset+1)
			}
			commitPolled(ctx, cl, id, cfg, rec)
		}
		cl.AllowRebalance()
	}
	return nil
}

// commitPolled commits what the member has polled, recording each
// partition's commit before it is sent and its answer after.
func commitPolled(ctx context.Context, cl *kgo.Client, id int, cfg *Config, rec *recorder) {
	offsets := cl.UncommittedOffsets()
	if len(offsets[cfg.Topic]) == 0 {
		return
	}
	for p, eo := range offsets[cfg.Topic] {
		rec.add(verify.Event{Type: verify.EventCommit, Consumer: id, Group: cfg.Group, Partition: p, Offset: eo.Offset})
	}
	cctx, cancel := context.WithTimeout(ctx, groupCommitTimeout)
	defer cancel()
	cl.CommitOffsetsSync(cctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		answered := map[int32]error{}
		if err == nil {
			for _, t := range resp.Topics {
				if t.Topic != cfg.Topic {
					continue
				}
				for _, p := range t.Partitions {
					answered[p.Partition] = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
		for p, eo := range offsets[cfg.Topic] {
			perr, ok := answered[p]
			switch {
			case err != nil:
				perr = err
			case !ok:
				perr = errors.New("no answer for the partition")
			}
			e := verify.Event{Type: verify.EventCommitDone, Consumer: id, Group: cfg.Group, Partition: p, Offset: eo.Offset}
			if perr != nil {
				e.Err = perr.Error()
			}
			rec.add(e)
		}
	})
}

// pollErrors lists a poll's errors, leaving out those of the run ending.
func pollErrors(fetches kgo.Fetches) []string {
	var errs []string
	for _, fe := range fetches.Errors() {
		if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, kgo.ErrClientClosed) {
			continue
		}
		errs = append(errs, fmt.Sprintf("%s/%d: %v", fe.Topic, fe.Partition, fe.Err))
	}
	return errs
}
