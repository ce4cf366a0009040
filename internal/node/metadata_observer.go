package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/quorum"
	"github.com/skein-log/skein/internal/rpc"
)

// A broker-only node follows the metadata log as a KRaft broker does: it
// fetches committed entries from the controllers (Fetch of
// __cluster_metadata, FetchSnapshot when it is behind the log's start) and
// applies them to its image exactly as voters apply theirs. It sends no
// Raft message, so it never votes and never counts towards a commit. It
// keeps no metadata log of its own: after a restart it rebuilds the image
// from a controller's snapshot and entries, and serves clients only once
// registered, which needs a controller anyway.

// Timing and limits of the observer's fetches.
const (
	observerFetchWait   = 500 * time.Millisecond // long poll on the controller
	observerBackoff     = 100 * time.Millisecond // after a failed fetch
	observerDialTimeout = time.Second
	maxSnapshotBytes    = 512 << 20
)

// startMetadataObserver starts following the metadata log on a node
// without the controller role.
func (b *Broker) startMetadataObserver(clusterID string) {
	b.setControllerVoters(b.initialVoters())
	b.emptyImage = metadata.Empty(clusterID)
	b.image.Store(b.emptyImage)
	obs := quorum.NewObserver(b.applyMetadataEntry, b.restoreObservedSnapshot, b.logger(loggerMetadataObserver))
	b.bgWG.Add(1)
	go b.observeLoop(obs)
}

// restoreObservedSnapshot replaces the image with a controller's snapshot.
func (b *Broker) restoreObservedSnapshot(s quorum.SnapshotInfo, data []byte) error {
	recs, err := metadata.DecodeEntry(data)
	if err != nil {
		return fmt.Errorf("decode metadata snapshot: %w", err)
	}
	im, err := b.emptyImage.Apply(recs...)
	if err != nil {
		return fmt.Errorf("apply metadata snapshot: %w", err)
	}
	b.metadataSnapshotsLoaded.Add(1)
	b.installImage(b.Image(), im.WithVersion(int64(s.Index)))
	return nil
}

// MetadataSnapshotsLoaded counts the controller snapshots this broker-only
// node loaded because the entries it needed were compacted away.
func (b *Broker) MetadataSnapshotsLoaded() int64 { return b.metadataSnapshotsLoaded.Load() }

// metadataSource is the controller an observer fetches from: the active
// controller when known (it has every committed entry first), else the
// voters in turn. leaderEpoch is the highest Raft term heard of, so an
// answer from a voter that has not seen the latest election never moves
// the controller back.
type metadataSource struct {
	b           *Broker
	conn        *rpc.Conn
	connID      int32
	next        int // round-robin position among the voters
	leaderEpoch int32
}

func (s *metadataSource) target() int32 {
	if id := s.b.controllerID.Load(); id >= 0 {
		return id
	}
	voters := s.b.controllerVoters()
	return voters[s.next%len(voters)].ID
}

func (s *metadataSource) connect(ctx context.Context) (*rpc.Conn, error) {
	id := s.target()
	if s.conn != nil && s.connID == id {
		select {
		case <-s.conn.Done():
		default:
			return s.conn, nil
		}
	}
	s.close()
	s.connID = id // the voter tried, for failed() even when the dial fails
	addr, ok := s.b.voterAddr(id)
	if !ok {
		return nil, fmt.Errorf("controller %d is not among controller.quorum.voters", id)
	}
	dctx, cancel := context.WithTimeout(ctx, observerDialTimeout)
	defer cancel()
	conn, err := dialCluster(dctx, s.b.cfg, nil, controllerListener(s.b.cfg), addr, fmt.Sprintf("skein-observer-%d", s.b.cfg.NodeID))
	if err != nil {
		return nil, err
	}
	s.conn = conn
	return conn, nil
}

// failed moves on to another voter after a failed fetch: the one asked
// may be dead, and any live voter names the current leader.
func (s *metadataSource) failed() {
	s.close()
	if i := slices.IndexFunc(s.b.controllerVoters(), func(v config.Voter) bool { return v.ID == s.connID }); i >= 0 {
		s.next = i + 1
	} else {
		s.next++
	}
	if s.b.controllerID.Load() >= 0 {
		s.b.onControllerChange(-1) // find it again through the voters
	}
}

func (s *metadataSource) close() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// heardLeader takes the leader a voter named, if its epoch is not older
// than what this node already knows.
func (s *metadataSource) heardLeader(id, epoch int32) {
	if epoch < s.leaderEpoch || epoch == s.leaderEpoch && (id < 0 || id == s.b.controllerID.Load()) {
		return
	}
	s.leaderEpoch = epoch
	if id != s.b.controllerID.Load() {
		s.b.onControllerChange(id)
	}
}

// observeLoop fetches and applies until the broker stops.
func (b *Broker) observeLoop(obs *quorum.Observer) {
	defer b.bgWG.Done()
	src := &metadataSource{b: b, connID: -1, leaderEpoch: -1}
	defer src.close()
	// A fetch in flight ends when the broker stops, not when a hung
	// controller finally answers.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-b.stop:
			return
		default:
		}
		if err := b.observeOnce(ctx, src, obs); err != nil {
			if !errors.Is(err, rpc.ErrClosed) {
				b.log.Debug("metadata fetch", "controller", src.connID, "err", err)
			}
			src.failed()
			select {
			case <-b.stop:
				return
			case <-time.After(observerBackoff):
			}
		}
	}
}

// observeOnce sends one Fetch of the metadata log and applies the answer.
func (b *Broker) observeOnce(ctx context.Context, src *metadataSource, obs *quorum.Observer) error {
	ctx, cancel := context.WithTimeout(ctx, observerFetchWait+controllerRPCTimeout)
	defer cancel()
	conn, err := src.connect(ctx)
	if err != nil {
		return err
	}
	resp, err := conn.Request(ctx, b.metadataFetchRequest(obs.Next()-1))
	if err != nil {
		return err
	}
	fr := resp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
		if errors.Is(err, kerr.InconsistentClusterID) {
			b.noteForeignCluster(fmt.Sprintf("controller %d", src.connID), api.TaggedClusterID(fr.UnknownTags), b.emptyImage.ClusterID())
		}
		return err
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return errors.New("metadata fetch answer without the metadata partition")
	}
	p := fr.Topics[0].Partitions[0]
	src.heardLeader(p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch)
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return err
	}
	if p.SnapshotID.EndOffset > 0 {
		snap := quorum.SnapshotInfo{Index: uint64(p.SnapshotID.EndOffset), Term: uint64(max(p.SnapshotID.Epoch, 0))}
		data, err := b.fetchSnapshot(ctx, conn, p.SnapshotID.EndOffset, p.SnapshotID.Epoch)
		if err != nil {
			return fmt.Errorf("fetch metadata snapshot at index %d: %w", snap.Index, err)
		}
		if err := obs.Restore(snap, data); err != nil {
			return err
		}
		b.followObservedMembership(obs)
		return nil
	}
	entries, err := quorum.DecodeEntryBatches(p.RecordBatches)
	if err != nil {
		return err
	}
	if p.HighWatermark < 0 {
		return fmt.Errorf("metadata fetch answer with high watermark %d", p.HighWatermark)
	}
	if err := obs.ApplyEntries(entries, uint64(p.HighWatermark)); err != nil {
		return err
	}
	b.followObservedMembership(obs)
	return nil
}

func (b *Broker) metadataFetchRequest(offset uint64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 13
	req.ReplicaID = b.cfg.NodeID
	req.MaxWaitMillis = int32(observerFetchWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = maxMetadataFetchBytes
	clusterID := b.emptyImage.ClusterID()
	req.ClusterID = &clusterID
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = api.MetadataLogTopic, api.MetadataLogTopicID
	p := kmsg.NewFetchRequestTopicPartition()
	p.FetchOffset = int64(offset)
	p.PartitionMaxBytes = maxMetadataFetchBytes
	t.Partitions = []kmsg.FetchRequestTopicPartition{p}
	req.Topics = []kmsg.FetchRequestTopic{t}
	return req
}

// fetchSnapshot reads a whole snapshot in chunks from one controller.
func (b *Broker) fetchSnapshot(ctx context.Context, conn *rpc.Conn, endOffset int64, epoch int32) ([]byte, error) {
	var data []byte
	clusterID := b.emptyImage.ClusterID()
	for {
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.Version = 1
		req.ClusterID = &clusterID
		req.ReplicaID = b.cfg.NodeID
		req.MaxBytes = maxSnapshotChunkBytes
		t := kmsg.NewFetchSnapshotRequestTopic()
		t.Topic = api.MetadataLogTopic
		p := kmsg.NewFetchSnapshotRequestTopicPartition()
		p.CurrentLeaderEpoch = -1
		p.SnapshotID.EndOffset, p.SnapshotID.Epoch = endOffset, epoch
		p.Position = int64(len(data))
		t.Partitions = []kmsg.FetchSnapshotRequestTopicPartition{p}
		req.Topics = []kmsg.FetchSnapshotRequestTopic{t}
		resp, err := conn.Request(ctx, req)
		if err != nil {
			return nil, err
		}
		fr := resp.(*kmsg.FetchSnapshotResponse)
		if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
			return nil, err
		}
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return nil, errors.New("snapshot answer without the metadata partition")
		}
		rp := fr.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
			return nil, err
		}
		switch {
		case rp.Size < 0 || rp.Size > maxSnapshotBytes:
			return nil, fmt.Errorf("snapshot of %d bytes (limit %d)", rp.Size, maxSnapshotBytes)
		case rp.Position != int64(len(data)):
			return nil, fmt.Errorf("snapshot chunk at position %d, asked for %d", rp.Position, len(data))
		case len(rp.Bytes) == 0 && int64(len(data)) < rp.Size:
			return nil, errors.New("empty snapshot chunk before the end")
		}
		data = append(data, rp.Bytes...)
		if int64(len(data)) >= rp.Size {
			return data[:rp.Size], nil
		}
	}
}
