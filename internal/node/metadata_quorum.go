package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/quorum"
)

// metadataDirName is the directory of the metadata quorum's log inside the
// first log directory, named as KRaft names its own.
const metadataDirName = "__cluster_metadata-0"

// commitTimeout bounds how long a metadata change waits for the quorum.
const commitTimeout = 15 * time.Second

// startQuorum starts this node's member of the metadata quorum. Every
// node with the controller role is a voter; the records it commits build
// the image every broker serves.
func (b *Broker) startQuorum(clusterID string) error {
	if len(b.cfg.ControllerQuorumBootstrapServers) > 0 {
		return b.startDynamicQuorum(clusterID)
	}
	voters := slices.Clone(b.cfg.ControllerQuorumVoters)
	self := slices.IndexFunc(voters, func(v config.Voter) bool { return v.ID == b.cfg.NodeID })
	if len(voters) == 0 || (self >= 0 && voters[self].Port == 0) {
		// A quorum of one (or this node's own entry on port 0, in tests):
		// this node, at the address its controller listener is bound to.
		l, ok := b.cfg.ControllerListener()
		if !ok {
			return errors.New("no controller listener to run the metadata quorum on")
		}
		addr := b.Addr(l.Name)
		host, port, err := splitHostPort(addr)
		if err != nil {
			return fmt.Errorf("controller listener address %q: %w", addr, err)
		}
		me := config.Voter{ID: b.cfg.NodeID, Host: host, Port: port}
		if self >= 0 {
			voters[self] = me
		} else {
			voters = []config.Voter{me}
		}
	}
	b.setControllerVoters(voters)
	cfg := b.quorumConfig(clusterID)
	cfg.Voters, cfg.ElectionTicks = voters, electionTicks(len(voters))
	// A static voter sends its record (directory id, endpoint) to the
	// leader, which the kraft.version upgrade writes into the log; after
	// it, the membership is the log's as in a dynamic quorum.
	me, err := b.selfMember()
	if err != nil {
		return err
	}
	cfg.Self, cfg.ListenerName = me, me.Listeners[0].Name
	cfg.UpdateSelf, cfg.OnSelfUpdate = true, b.sendSelfUpdate
	cfg.OnMembershipChange = b.onQuorumMembership
	return b.startQuorumNode(cfg)
}

// quorumConfig is what this node's quorum member is, static or dynamic;
// it also starts the image empty.
func (b *Broker) quorumConfig(clusterID string) quorum.NodeConfig {
	b.emptyImage = metadata.Empty(clusterID)
	b.image.Store(b.emptyImage)
	return quorum.NodeConfig{
		NodeID:         b.cfg.NodeID,
		ClusterID:      clusterID,
		LocalAddr:      b.cfg.OutboundBindAddress,
		Secure:         b.quorumSecure(),
		Dir:            filepath.Join(b.cfg.LogDirs[0], metadataDirName),
		FS:             b.fs,
		TickInterval:   quorumTick,
		ElectionTicks:  quorumElectionTicks,
		HeartbeatTicks: 1,
		Snapshotter:    imageSnapshotter{b},

		SnapshotEntries: b.opts.MetadataSnapshotEvery,
		KeepEntries:     keepBehindSnapshot(b.opts.MetadataSnapshotEvery),
		Apply:           b.applyMetadataEntry,
		OnLeaderChange:  b.onControllerChange,
		PeersStopping:   func() []int32 { return ctrlcore.StoppingNodes(b.Image()) },
		Logger:          b.logger(loggerQuorum),
	}
}

func (b *Broker) startQuorumNode(cfg quorum.NodeConfig) error {
	n, err := quorum.StartNode(cfg)
	if err != nil {
		return fmt.Errorf("metadata quorum: %w", err)
	}
	b.quorum = n
	return nil
}

// keepBehindSnapshot is how many entries stay behind a snapshot when
// Options.MetadataSnapshotEvery is set: a tenth of the interval, at least
// one. 0 keeps the quorum's default.
func keepBehindSnapshot(every uint64) uint64 {
	if every == 0 {
		return 0
	}
	return max(every/10, 1)
}

// Raft timing: a 50 ms tick and 10 ticks per election timeout detect a
// dead controller in 0.5-1 s, which bounds failover when the controller
// itself dies.
const (
	quorumTick          = 50 * time.Millisecond
	quorumElectionTicks = 10
)

// electionTicks: a quorum of one has nobody to wait for, so it elects
// itself within a few ticks of starting.
func electionTicks(voters int) int {
	if voters == 1 {
		return 2
	}
	return quorumElectionTicks
}

// applyMetadataEntry runs on the quorum goroutine for every committed
// entry, in order, on every node. It must be deterministic: a record that
// does not apply is skipped identically everywhere.
func (b *Broker) applyMetadataEntry(index uint64, data []byte) {
	recs, err := metadata.DecodeEntry(data)
	if err != nil {
		b.log.Error("undecodable metadata entry skipped", "index", index, "err", err)
		return
	}
	cur := b.Image()
	next := cur
	if len(recs) > 0 {
		if next, err = cur.Apply(recs...); err != nil {
			// The active controller checks each change against the
			// image it will apply to, so this is a bug; every node skips
			// the entry alike, so the images stay identical.
			b.log.Error("metadata entry does not apply; skipped", "index", index, "err", err)
			next = cur
		}
	}
	b.installImage(cur, next.WithVersion(int64(index)))
}

// installImage makes next the image (its version set), after cur, and
// wakes whoever waits for it.
func (b *Broker) installImage(cur, next *metadata.Image) {
	b.fenceMu.Lock()
	b.fenceTimes.Observe(cur, next, time.Now().UnixMilli())
	b.fenceMu.Unlock()
	b.image.Store(next)
	b.notifyImageChange()
}

// fencedAtMs is api.Backend.FencedAtMs.
func (b *Broker) fencedAtMs(id int32) (int64, bool) {
	b.fenceMu.Lock()
	defer b.fenceMu.Unlock()
	return b.fenceTimes.FencedAtMs(id)
}

// notifyImageChange wakes the reconciler and everyone waiting for a
// version.
func (b *Broker) notifyImageChange() {
	select {
	case b.reconcileCh <- struct{}{}:
	default:
	}
	b.imageCond.L.Lock()
	b.imageCond.Broadcast()
	b.imageCond.L.Unlock()
}

// reconcileLoop brings partitions in line with each new image, off the
// quorum goroutine (opening logs is I/O).
func (b *Broker) reconcileLoop() {
	defer b.bgWG.Done()
	for {
		select {
		case <-b.stop:
			return
		case <-b.reconcileCh:
		}
		im := b.Image()
		if err := b.reconcilePartitions(); err != nil {
			b.log.Error("reconciling partitions with metadata", "version", im.Version(), "err", err)
		}
		b.fetchers.update()
		b.groups.reconcile()
		b.txns.reconcile()
		b.imageCond.L.Lock()
		b.reconciled = im.Version()
		b.reconciledVersion.Store(im.Version())
		b.imageCond.Broadcast()
		b.imageCond.L.Unlock()
	}
}

// waitReconciled waits until partitions reflect at least image version v.
func (b *Broker) waitReconciled(ctx context.Context, v int64) error {
	stop := context.AfterFunc(ctx, func() {
		b.imageCond.L.Lock()
		b.imageCond.Broadcast()
		b.imageCond.L.Unlock()
	})
	defer stop()
	b.imageCond.L.Lock()
	defer b.imageCond.L.Unlock()
	for b.reconciled < v {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.imageCond.Wait()
	}
	return nil
}

// waitImage waits until the image satisfies cond.
func (b *Broker) waitImage(ctx context.Context, cond func(*metadata.Image) bool) error {
	stop := context.AfterFunc(ctx, func() {
		b.imageCond.L.Lock()
		b.imageCond.Broadcast()
		b.imageCond.L.Unlock()
	})
	defer stop()
	b.imageCond.L.Lock()
	defer b.imageCond.L.Unlock()
	for !cond(b.Image()) {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.imageCond.Wait()
	}
	return nil
}

func quorumError(err error) error {
	switch {
	case errors.Is(err, quorum.ErrNotLeader):
		return fmt.Errorf("%w: %v", kerr.NotController, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: metadata quorum did not commit in time", kerr.RequestTimedOut)
	}
	return fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
}

// onControllerChange runs on the quorum goroutine when the quorum leader
// changes.
func (b *Broker) onControllerChange(leader int32) {
	b.controllerID.Store(leader)
	if leader >= 0 && !b.cfg.HasRole(config.RoleBroker) {
		// A controller-only node never registers: it is up once it
		// knows the active controller.
		b.registeredOnce.Do(func() { close(b.registered) })
	}
	if leader == b.cfg.NodeID {
		b.log.Info("became the active controller")
		b.controllerSvc.activate()
	} else {
		b.controllerSvc.deactivate()
	}
	select {
	case b.controllerChanged <- struct{}{}:
	default:
	}
	b.imageCond.L.Lock()
	b.imageCond.Broadcast()
	b.imageCond.L.Unlock()
	if leader >= 0 {
		// ISR proposals waiting out a resend backoff go to the new
		// controller at once (replica.ControllerChanged).
		for _, p := range b.partitionList() {
			p.controllerChanged()
		}
	}
}

// isActiveController reports whether this node decides metadata changes.
func (b *Broker) isActiveController() bool {
	return b.quorum != nil && b.quorum.IsLeader()
}

// imageSnapshotter lets the quorum compact its log: a snapshot is the
// image written as the records that rebuild it.
type imageSnapshotter struct{ b *Broker }

func (s imageSnapshotter) Snapshot() ([]byte, error) { return metadata.EncodeSnapshot(s.b.Image()) }

// Restore installs a snapshot's image (metadata.RestoreSnapshot: its
// version is the snapshot's index).
func (s imageSnapshotter) Restore(index uint64, data []byte) error {
	im, err := metadata.RestoreSnapshot(s.b.emptyImage, index, data)
	if err != nil {
		return err
	}
	s.b.installImage(s.b.Image(), im)
	return nil
}

// newImageCond is the condition variable for image and reconcile progress
// (Broker.imageCond).
func newImageCond() *sync.Cond { return sync.NewCond(&sync.Mutex{}) }
