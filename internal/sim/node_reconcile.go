package sim

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replication"
)

// reconcile is Broker.reconcilePartitions followed by fetchers.update:
// open the replicas this node holds, give each the role the image decides
// (none until the image holds this incarnation's registration), and assign
// followers to one fetcher per leader.
func (p *process) reconcile() {
	for _, t := range p.image.Topics() {
		cfg, err := config.ResolveTopic(p.cfg, t.Configs)
		if err != nil {
			p.n.c.violation("config of %s: %v", t.Name, err)
			continue
		}
		for _, st := range t.Partitions {
			if !slices.Contains(st.Replicas, p.n.id) {
				continue
			}
			k := partKey{t.ID, st.Index}
			r, ok := p.parts[k]
			if !ok {
				if r, err = p.openReplica(t, st, cfg); err != nil {
					p.n.tracef("cannot open %s-%d: %v", t.Name, st.Index, err)
					continue
				}
				p.parts[k] = r
			}
			if err := r.apply(st, p.image.ReplicaRole(p.n.id, p.brokerEpoch, st), cfg); err != nil {
				p.n.tracef("apply %s: %v", r.name(), err)
			}
		}
	}
	p.updateFetchers()
}

func (p *process) updateFetchers() {
	want := map[int32][]*replica{}
	for _, r := range p.partitionList() {
		if leader, _, ok := r.following(); ok {
			want[leader] = append(want[leader], r)
		}
	}
	for id, f := range p.fetchers {
		if _, ok := want[id]; !ok {
			f.stopped = true
			delete(p.fetchers, id)
		}
	}
	for _, id := range sortedKeys(want) {
		f, ok := p.fetchers[id]
		if !ok {
			f = newFetcher(p, id)
			p.fetchers[id] = f
		}
		f.assign(want[id])
	}
}

// following reports the leader and epoch this replica follows.
func (r *replica) following() (leader, epoch int32, ok bool) {
	if r.role != metadata.RoleFollower {
		return 0, 0, false
	}
	return r.state.Leader, r.state.LeaderEpoch, true
}

// isrLoop is the maintenance tick: ISR shrinks for followers that stopped
// catching up.
func (p *process) isrLoop() {
	for _, r := range p.partitionList() {
		r.maybeProposeISR()
	}
	p.n.after(isrTickPeriod, p.isrLoop)
}

func (p *process) isEligibleReplica(id int32) bool { return p.image.IsActive(id) }

// sendISRChange is Broker.proposeISRChange: AlterPartition to the active
// controller; a refusal or a lost answer lets the replication state retry.
func (p *process) sendISRChange(r *replica, change replication.ISRChange) {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 2
	req.BrokerID = p.n.id
	req.BrokerEpoch = p.brokerEpoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = r.id
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = r.index
	rp.LeaderEpoch = change.LeaderEpoch
	rp.PartitionEpoch = change.PartitionEpoch
	rp.NewISR = change.NewISR
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if p.controller < 0 {
		// An earlier send of the same change may still commit: try again.
		p.n.after(isrResendBackoff, func() { p.resendISRChange(r, change) })
		return
	}
	p.call(p.controller, req, func(resp kmsg.Response, err error) {
		if err == nil {
			ar := resp.(*kmsg.AlterPartitionResponse)
			if err = kerr.ErrorForCode(ar.ErrorCode); err == nil && len(ar.Topics) == 1 && len(ar.Topics[0].Partitions) == 1 {
				err = kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode)
			}
		}
		if err == nil {
			return
		}
		if outcomeUnknown(err) {
			p.n.tracef("%s ISR change %v: outcome unknown (%v); resending", r.name(), change.NewISR, err)
			p.n.after(isrResendBackoff, func() { p.resendISRChange(r, change) })
			return
		}
		p.n.tracef("%s ISR change %v refused: %v", r.name(), change.NewISR, err)
		r.onISRChangeRejected(change, err)
	})
}

// isrResendBackoff spaces resends of a proposal whose outcome is unknown.
const isrResendBackoff = 100 * time.Millisecond

// outcomeUnknown says whether an AlterPartition failure leaves the
// proposal's fate open: no answer, or a controller that lost office after
// proposing the entry (its successor may still commit it). Only answers
// that say the change was not and will not be applied (INELIGIBLE_REPLICA,
// OPERATION_NOT_ATTEMPTED) or that this leader's view is stale may reach
// replication.Leader.OnISRChangeRejected. Kafka's AlterPartitionManager
// retries the others the same way. internal/node passes every failure to
// OnISRChangeRejected, which drops the proposal: its additions stop
// bounding the HW although the controller may commit them (found by this
// simulator; see TestRegressions, seed 905).
func outcomeUnknown(err error) bool {
	for _, known := range []error{kerr.IneligibleReplica, kerr.OperationNotAttempted, kerr.InvalidUpdateVersion,
		kerr.FencedLeaderEpoch, kerr.UnknownTopicOrPartition, kerr.UnknownTopicID} {
		if errors.Is(err, known) {
			return false
		}
	}
	return true
}

// resendISRChange sends the same proposal again while it is still the
// one pending on this replica's leader state.
func (p *process) resendISRChange(r *replica, change replication.ISRChange) {
	if r.leader == nil {
		return
	}
	pending, ok := r.leader.Pending()
	if !ok || pending.PartitionEpoch != change.PartitionEpoch || pending.LeaderEpoch != change.LeaderEpoch ||
		!slices.Equal(pending.NewISR, change.NewISR) {
		return
	}
	p.sendISRChange(r, change)
}

func sortedKeys[V any](m map[int32]V) []int32 {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
