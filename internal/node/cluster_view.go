package node

import (
	"errors"
	"fmt"
	"slices"

	"github.com/skein-log/skein/internal/admin"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/metrics"
)

// clusterView answers the scrape-time questions of the metrics collector
// from the current image; it never blocks on the broker's locks for long.
type clusterView struct{ b *Broker }

func (v clusterView) PartitionHealth() metrics.PartitionHealth {
	h := metrics.PartitionHealth{OpenFilesLimitOffline: v.b.closedForOpenFilesCount()}
	im := v.b.Image()
	if im == nil {
		return h
	}
	self := v.b.cfg.NodeID
	for _, t := range im.Topics() {
		minISR := int32(1)
		if cfg, err := v.b.topicConfig(t); err == nil {
			minISR = cfg.MinInsyncReplicas
		}
		for _, p := range t.Partitions {
			if !slices.Contains(p.Replicas, self) {
				continue
			}
			h.Partitions++
			if p.Leader == metadata.NoLeader || !im.IsActive(p.Leader) {
				h.Offline++
			}
			if p.Leader != self {
				continue
			}
			h.Leaders++
			if len(p.ISR) < len(p.Replicas) {
				h.UnderReplicated++
			}
			switch effective := min(minISR, int32(len(p.Replicas))); {
			case int32(len(p.ISR)) < effective:
				h.UnderMinISR++
			case int32(len(p.ISR)) == effective:
				h.AtMinISR++
			}
		}
	}
	return h
}

func (v clusterView) IsActiveController() bool { return v.b.isActiveController() }

// GroupLags reads the committed offsets of the groups coordinated here
// and the high watermark of each partition this broker hosts (leader or
// follower: a follower's is at most one fetch behind). A partition with no
// replica here has no lag series; with the usual replication factor of 3
// on 3 brokers every broker hosts every partition.
func (v clusterView) GroupLags() []metrics.GroupLag {
	im := v.b.Image()
	if im == nil {
		return nil
	}
	var out []metrics.GroupLag
	handles, _ := v.b.groups.All()
	for _, h := range handles {
		_ = h.(*groupCoordinator).read(func(c *group.Coordinator) {
			for _, g := range c.ListGroups(nil) {
				for _, o := range c.FetchOffsets(g.GroupID, nil) {
					if o.Offset < 0 {
						continue
					}
					t, ok := im.Topic(o.Topic)
					if !ok {
						continue
					}
					p := v.b.partition(t.ID, o.Partition)
					if p == nil {
						continue
					}
					out = append(out, metrics.GroupLag{Group: g.GroupID, Topic: o.Topic, Partition: o.Partition,
						Records: p.highWatermark.Load() - o.Offset})
				}
			}
		})
	}
	return out
}

func (v clusterView) FetchSessions() metrics.FetchSessionStats {
	s, p, e := v.b.fetchSessions.stats()
	return metrics.FetchSessionStats{Sessions: s, Partitions: p, Evictions: e}
}

func (v clusterView) FollowerLags() []metrics.FollowerLag {
	var out []metrics.FollowerLag
	for _, p := range v.b.partitionList() {
		p.mu.Lock()
		if snap, ok := p.core.LeaderSnapshot(); ok {
			for _, f := range snap.Followers {
				if f.Offset < 0 {
					continue
				}
				out = append(out, metrics.FollowerLag{Topic: p.topic, Partition: p.index, Replica: f.ID, Records: max(snap.LogEndOffset-f.Offset, 0)})
			}
		}
		p.mu.Unlock()
	}
	return out
}

// startAdmin serves /metrics, /healthz and /readyz on admin.listeners.
func (b *Broker) startAdmin() error {
	for _, a := range b.cfg.AdminListeners {
		s := admin.New(a.Addr(), b.reg, nil, b.Ready, b.log)
		if b.cfg.AdminPprof {
			s.EnablePprof()
		}
		if err := s.Start(); err != nil {
			for _, started := range b.admins {
				started.Close()
			}
			b.admins = nil
			return fmt.Errorf("admin listener %s: %w", a.Addr(), err)
		}
		b.admins = append(b.admins, s)
	}
	return nil
}

// AdminAddr is the bound address of the first admin listener, if any.
func (b *Broker) AdminAddr() string {
	if len(b.admins) == 0 {
		return ""
	}
	return b.admins[0].Addr()
}

// Ready reports whether the broker should receive traffic: its logs are
// recovered, it is registered, its image holds that registration (it has
// caught up with metadata) and does not fence it.
func (b *Broker) Ready() error {
	err := b.ready()
	if err != nil {
		if why := b.foreignClusterReason(); why != "" {
			// The likely cause of not being ready: say it first.
			return fmt.Errorf("%s; %w", why, err)
		}
	}
	return err
}

func (b *Broker) ready() error {
	im := b.Image()
	if im == nil {
		return errors.New("starting: metadata not loaded yet")
	}
	if !b.cfg.HasRole(config.RoleBroker) {
		if b.controllerID.Load() < 0 {
			return errors.New("no active controller known: the metadata quorum has no leader")
		}
		return nil
	}
	br, ok := im.Broker(b.cfg.NodeID)
	epoch := b.brokerEpoch.Load()
	if !ok || epoch < 0 {
		return errors.New("not registered with the controller yet")
	}
	if !im.CaughtUpFor(b.cfg.NodeID, epoch) {
		return errors.New("catching up with metadata: the image does not hold this registration yet")
	}
	if br.Fenced {
		return errors.New("fenced by the controller")
	}
	if !b.serving.Load() {
		return errors.New("starting: logs are still being recovered")
	}
	return nil
}

// isEligibleReplica says whether a broker may join an ISR: registered,
// unfenced and not shutting down.
func (b *Broker) isEligibleReplica(id int32) bool { return b.Image().IsActive(id) }
