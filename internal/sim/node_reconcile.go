package sim

import (
	"errors"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replication"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// reconcile is Broker.reconcilePartitions followed by fetchers.update:
// open the replicas this node holds, give each the role the image decides
// (none until the image holds this incarnation's registration), and assign
// followers to one fetcher per leader.
func (p *process) reconcile() {
	// Only what changed since the last reconciled image is visited, as
	// in node (metadata.Reconciled).
	changes := p.reconciled.Changes(p.image, p.n.id, p.brokerEpoch)
	var visit []metadata.ChangedPartition
	if changes.Full {
		for _, r := range p.partitionList() {
			if !p.image.Lists(p.n.id, r.id, r.index) {
				p.drop(r, p.image.Retired(p.n.id, p.brokerEpoch, r.id, r.index))
			}
		}
		for _, t := range p.image.Topics() {
			for _, st := range t.Partitions {
				visit = append(visit, metadata.ChangedPartition{Topic: t, Partition: st})
			}
		}
	} else {
		for _, c := range changes.Partitions {
			if r := p.parts[partKey{c.Topic.ID, c.Partition.Index}]; r != nil && !slices.Contains(c.Partition.Replicas, p.n.id) {
				p.drop(r, p.image.Retired(p.n.id, p.brokerEpoch, r.id, r.index))
			}
		}
		for _, id := range changes.Removed {
			for _, r := range p.partitionList() {
				if r.id == id {
					p.drop(r, p.image.Retired(p.n.id, p.brokerEpoch, r.id, r.index))
				}
			}
		}
		visit = changes.Partitions
	}
	if p.image.CaughtUpFor(p.n.id, p.brokerEpoch) && p.sweptEpoch != p.brokerEpoch {
		p.sweptEpoch = p.brokerEpoch
		p.sweepRetired()
	}
	failed := false
	configs := map[*metadata.Topic]config.TopicConfig{}
	type applying struct {
		r   *replica
		st  metadata.Partition
		cfg config.TopicConfig
	}
	var toApply []applying
	// New replicas are created without fsyncs and made durable with one
	// SyncFS per log directory before any is applied, as in node.
	var fresh []*replica
	for _, c := range visit {
		t, st := c.Topic, c.Partition
		if !slices.Contains(st.Replicas, p.n.id) {
			continue
		}
		cfg, ok := configs[t]
		if !ok {
			var err error
			if cfg, err = config.ResolveTopic(p.cfg, t.Configs); err != nil {
				p.n.c.violation("config of %s: %v", t.Name, err)
				failed = true
				continue
			}
			configs[t] = cfg
		}
		k := partKey{t.ID, st.Index}
		r, ok := p.parts[k]
		if !ok {
			var err error
			var created bool
			if r, created, err = p.openReplica(t, st, cfg); err != nil {
				p.n.tracef("cannot open %s-%d: %v", t.Name, st.Index, err)
				failed = true
				continue
			}
			p.parts[k] = r
			if created {
				fresh = append(fresh, r)
			}
			p.reopenMove(r)
		}
		toApply = append(toApply, applying{r, st, cfg})
	}
	syncs := vfs.NewFSSyncs(p.n.fs)
	for _, r := range fresh {
		if err := syncs.Sync(path.Dir(r.log.Dir())); err != nil {
			p.n.tracef("sync the new %s: %v", r.name(), err)
			delete(p.parts, partKey{r.id, r.index})
			r.ready(r.core.Close())
			if err := r.log.Close(); err != nil {
				p.n.tracef("close %s: %v", r.name(), err)
			}
			p.forgetCache(r)
			failed = true
		}
	}
	for _, a := range toApply {
		if p.parts[partKey{a.r.id, a.r.index}] != a.r {
			continue // its creation was not made durable
		}
		if err := a.r.apply(a.st, p.image.ReplicaRole(p.n.id, p.brokerEpoch, a.st), a.cfg); err != nil {
			p.n.tracef("apply %s: %v", a.r.name(), err)
			failed = true
		}
	}
	if failed {
		p.reconciled.Forget()
	} else {
		p.reconciled.Done(p.image, p.n.id, p.brokerEpoch)
	}
	p.updateFetchers()
}

// drop closes a replica the image no longer gives this node, and deletes
// its log when the image retires it (caught up for this registration), as
// node's reconcile does (there crash-safely, renaming first; here a crash
// before the removal is synced leaves the directory, which is only opened
// again if the image lists the replica again, as node would).
func (p *process) drop(r *replica, retired bool) {
	delete(p.parts, partKey{r.id, r.index})
	if p.dirs.moves[r] != nil {
		p.cancelMove(r, "abandoned: the replica left the node")
	}
	p.n.c.onLogDirMoveAbandoned(p.n, r)
	r.ready(r.core.Close())
	epoch := int32(math.MaxInt32) // the topic is gone: newer than any view
	if t, ok := p.image.TopicByID(r.id); ok {
		if st, ok := t.Partition(r.index); ok {
			epoch = st.PartitionEpoch
		}
	}
	p.n.c.onReplicaDropped(p.n, r, epoch)
	dir := r.log.Dir()
	if err := r.log.Close(); err != nil {
		p.n.tracef("close %s: %v", r.name(), err)
	}
	p.forgetCache(r)
	if !retired {
		p.n.tracef("closed %s, not listed by an image not caught up", r.name())
		return
	}
	if err := p.deleteDir(dir); err != nil {
		p.n.tracef("delete retired %s: %v", r.name(), err)
	}
	p.n.tracef("retired %s", r.name())
	p.n.c.check.stats.Retired++
}

// sweepRetired is node's removeStrayPartitionDirs: once per registration,
// on the first image caught up for it, the directories of replicas that
// are not open and that the image retires (closed while the image lagged,
// moved away or deleted while the node was down) are deleted.
func (p *process) sweepRetired() {
	for _, root := range p.dirs.roots {
		p.sweepRetiredIn(root)
	}
}

func (p *process) sweepRetiredIn(root string) {
	dirs, err := p.n.fs.ReadDir(root)
	if err != nil {
		return
	}
	for _, d := range dirs {
		if d.IsDir && strings.HasSuffix(d.Name, "-delete") {
			// A log a move superseded, not removed before a crash
			// (node's removeStrayPartitionDirs removes them so).
			if err := p.n.fs.RemoveAll(path.Join(root, d.Name)); err != nil {
				p.n.tracef("sweep %s: %v", d.Name, err)
			}
			continue
		}
		topicName, index, future, ok := storage.ParsePartitionDirName(d.Name)
		if !d.IsDir || d.Name == metadataDir || !ok {
			continue
		}
		t, ok := p.image.Topic(topicName)
		if ok && (p.parts[partKey{t.ID, index}] != nil || !p.image.Retired(p.n.id, p.brokerEpoch, t.ID, index)) {
			continue
		}
		if future && p.n.c.opts.strayFuturesKept {
			continue
		}
		if future {
			// Node's removeStrayPartitionDirs: the future log a restart
			// kept of a replica that left while the node was down.
			name := topicName + "-" + strconv.Itoa(int(index))
			if p.dirs.kept[name] == path.Join(root, d.Name) {
				delete(p.dirs.kept, name)
				delete(p.dirs.preferred, name)
			}
		}
		if err := p.deleteDir(path.Join(root, d.Name)); err != nil {
			p.n.tracef("sweep %s: %v", d.Name, err)
			continue
		}
		p.n.tracef("swept %s", d.Name)
	}
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

// isrLoop is the maintenance tick: ISR shrinks for followers that stopped
// catching up.
func (p *process) isrLoop() {
	for _, r := range p.partitionList() {
		if r.core.TickIdle() {
			// Nothing to decide (rcore.Replica.TickIdle): node's tick
			// skips it. Ticked here all the same, to prove that.
			if rd := r.core.Tick(r.nowMs(), p.isEligibleReplica); rd.Propose != nil {
				p.n.c.violation("%s: %s is tick-idle, yet its tick proposed ISR %v", p.n, r.name(), rd.Propose.NewISR)
				r.ready(rd)
			}
			continue
		}
		r.ready(r.core.Tick(r.nowMs(), p.isEligibleReplica))
	}
	p.n.after(isrTickPeriod, p.isrLoop)
}

func (p *process) isEligibleReplica(id int32) bool { return p.image.IsActive(id) }

// sendISRChange queues an ISR proposal in this process's batcher and
// sends what is queued unless a request is in flight (node's
// proposeISRChange).
func (p *process) sendISRChange(r *replica, change replication.ISRChange) {
	p.isr.Add(r, r.id, r.index, change)
	p.sendISRChanges()
}

// sendISRChanges sends the ISR changes queued to the active controller
// (one AlterPartition request, one in flight) and hands each outcome to
// its replica core, which decides whether to resend it and when
// (replication.Leader.OnISRAnswer: the broker's classifier and backoff);
// then what was queued meanwhile goes.
func (p *process) sendISRChanges() {
	req := p.isr.Next(p.n.id, p.brokerEpoch)
	if req == nil {
		return
	}
	answer := func(resp *kmsg.AlterPartitionResponse, err error) {
		for _, o := range p.isr.Answered(resp, err) {
			if o.Err != nil {
				p.n.tracef("%s ISR change %v: %v", o.Key.name(), o.Change.NewISR, o.Err)
			}
			o.Key.ready(o.Key.core.OnISRAnswer(o.Change, o.Err))
		}
		p.sendISRChanges()
	}
	if p.controller < 0 {
		// An earlier send of the same changes may still commit: unknown.
		answer(nil, errNoController)
		return
	}
	p.call(p.controller, req, func(resp kmsg.Response, err error) {
		r, _ := resp.(*kmsg.AlterPartitionResponse)
		answer(r, err)
	})
}

var errNoController = errors.New("no controller known")

func sortedKeys[V any](m map[int32]V) []int32 {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
