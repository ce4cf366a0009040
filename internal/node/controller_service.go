package node

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/producer"
)

// controllerService is the active controller's runtime: broker sessions
// (registration, heartbeats, fencing), ISR changes and producer id blocks.
// Its decisions come from internal/controller; it commits their records
// through the quorum. On a node that is not the active controller every
// call fails with NOT_CONTROLLER and the caller retries elsewhere.
type controllerService struct {
	b *Broker

	mu     sync.Mutex
	active bool
	// lastSeen is when each broker's session was last renewed.
	lastSeen map[int32]time.Time
	// sessionConn is the connection each broker last heartbeated on: if
	// it closes, the broker's process most likely died (a closed socket
	// is a far earlier signal than a missed heartbeat).
	sessionConn map[int32]api.ConnID
	// wake asks the loop to run now (activation, a closed session).
	wake chan struct{}
}

func newControllerService(b *Broker) *controllerService {
	return &controllerService{b: b, lastSeen: map[int32]time.Time{}, sessionConn: map[int32]api.ConnID{}, wake: make(chan struct{}, 1)}
}

// activate runs on the quorum goroutine when this node becomes the
// controller: every broker gets a fresh session, then the loop checks
// the ones that cannot be reached at all.
func (c *controllerService) activate() {
	c.mu.Lock()
	c.active = true
	now := time.Now()
	for _, br := range c.b.Image().Brokers() {
		c.lastSeen[br.ID] = now
	}
	c.mu.Unlock()
	c.poke()
}

func (c *controllerService) deactivate() {
	c.mu.Lock()
	c.active = false
	clear(c.lastSeen)
	clear(c.sessionConn)
	c.mu.Unlock()
}

func (c *controllerService) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *controllerService) isActive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active && c.b.isActiveController()
}

// RegisterBroker commits a new registration (controller.RegisterBroker:
// the previous incarnation is fenced first, and the broker leaves the ELRs
// its restart may have cost it: all of them when a log directory was
// replaced, write.caching topics' after an unclean shutdown).
func (c *controllerService) RegisterBroker(req *kmsg.BrokerRegistrationRequest, conn api.ConnID) (int64, error) {
	if !c.isActive() {
		return -1, kerr.NotController
	}
	if req.ClusterID != c.b.Image().ClusterID() {
		return -1, fmt.Errorf("%w: broker %d is in cluster %q, this is %q", kerr.InconsistentClusterID, req.BrokerID, req.ClusterID, c.b.Image().ClusterID())
	}
	reg := controller.Registration{ID: req.BrokerID, PreviousBrokerEpoch: req.PreviousBrokerEpoch}
	if req.Rack != nil {
		reg.Rack = *req.Rack
	}
	for _, l := range req.Listeners {
		reg.Endpoints = append(reg.Endpoints, metadata.Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port)})
	}
	for _, d := range req.LogDirs {
		reg.LogDirs = append(reg.LogDirs, metadata.DirectoryID(d))
	}
	var epoch int64
	err := c.b.commitDecided(func(im *metadata.Image) ([]metadata.Record, error) {
		recs, e, err := controller.RegisterBroker(im, reg, c.writeCaching, c.uncleanAllowed)
		epoch = e
		return recs, err
	})
	if err != nil {
		return -1, err
	}
	c.mu.Lock()
	c.lastSeen[req.BrokerID] = time.Now()
	// The registration's connection is the session's until a heartbeat
	// names another: a broker that dies right after registering is
	// noticed as fast as one that heartbeated.
	c.sessionConn[req.BrokerID] = conn
	c.mu.Unlock()
	c.b.log.Info("broker registered", "broker", req.BrokerID, "epoch", epoch, "previous_clean_epoch", req.PreviousBrokerEpoch)
	return epoch, nil
}

// BrokerHeartbeat renews a session, unfences a broker that was fenced
// while alive (a pause, a partition), and drives controlled shutdown.
func (c *controllerService) BrokerHeartbeat(req *kmsg.BrokerHeartbeatRequest, conn api.ConnID) (api.BrokerHeartbeatResult, error) {
	var res api.BrokerHeartbeatResult
	if !c.isActive() {
		return res, kerr.NotController
	}
	br, ok := c.b.Image().Broker(req.BrokerID)
	if !ok || br.Epoch != req.BrokerEpoch {
		return res, kerr.StaleBrokerEpoch
	}
	c.mu.Lock()
	c.lastSeen[req.BrokerID] = time.Now()
	c.sessionConn[req.BrokerID] = conn
	c.mu.Unlock()
	res.IsCaughtUp = req.CurrentMetadataOffset >= br.Epoch-1

	switch {
	case req.WantShutdown:
		if !br.InControlledShutdown && !br.Fenced {
			recs, err := controller.BeginControlledShutdown(c.b.Image(), req.BrokerID)
			if err != nil {
				return res, err
			}
			if err := c.b.commit(recs); err != nil {
				return res, err
			}
		}
		res.ShouldShutdown = !c.leadsAnything(req.BrokerID)
	case br.Fenced && !req.WantFence && res.IsCaughtUp:
		if err := c.unfence(req.BrokerID); err != nil {
			return res, err
		}
	}
	br, _ = c.b.Image().Broker(req.BrokerID)
	res.IsFenced = br.Fenced
	return res, nil
}

func (c *controllerService) unfence(id int32) error {
	im := c.b.Image()
	recs, err := controller.UnfenceBroker(im, id)
	if err != nil {
		return err
	}
	next, err := im.Apply(recs...)
	if err != nil {
		return fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
	}
	recs = append(recs, controller.ElectLeaderless(next, c.uncleanAllowed)...)
	c.b.log.Info("unfencing broker", "broker", id)
	return c.b.commit(recs)
}

func (c *controllerService) leadsAnything(id int32) bool {
	for _, t := range c.b.Image().Topics() {
		for _, p := range t.Partitions {
			if p.Leader == id && len(p.Replicas) > 1 {
				return true
			}
		}
	}
	return false
}

// uncleanAllowed is the topic's unclean.leader.election.enable.
func (c *controllerService) uncleanAllowed(t *metadata.Topic) bool {
	cfg, err := c.b.topicConfig(t)
	return err == nil && cfg.UncleanLeaderElection
}

// writeCaching is the topic's write.caching; a config that cannot be
// resolved counts as true, the side that never keeps a doubtful ELR member.
func (c *controllerService) writeCaching(t *metadata.Topic) bool {
	cfg, err := c.b.topicConfig(t)
	return err != nil || cfg.WriteCaching
}

// AlterPartition commits an ISR change a partition leader proposed.
func (c *controllerService) AlterPartition(brokerID int32, brokerEpoch int64, topic metadata.TopicID, partition, leaderEpoch, partitionEpoch int32, newISR []int32) (metadata.Partition, error) {
	if !c.isActive() {
		return metadata.Partition{}, kerr.NotController
	}
	err := c.b.commitDecided(func(im *metadata.Image) ([]metadata.Record, error) {
		if br, ok := im.Broker(brokerID); !ok || br.Epoch != brokerEpoch || br.Fenced {
			return nil, kerr.StaleBrokerEpoch
		}
		return controller.AlterPartition(im, topic, partition, leaderEpoch, partitionEpoch, newISR)
	})
	if err != nil {
		return metadata.Partition{}, err
	}
	t, ok := c.b.Image().TopicByID(topic)
	if !ok || int(partition) >= len(t.Partitions) {
		return metadata.Partition{}, kerr.UnknownTopicOrPartition
	}
	return t.Partitions[partition], nil
}

// AllocateProducerIDs commits and hands out the next block of ids.
func (c *controllerService) AllocateProducerIDs(brokerID int32, brokerEpoch int64) (int64, int32, error) {
	if !c.isActive() {
		return 0, 0, kerr.NotController
	}
	var start int64
	err := c.b.commitDecided(func(im *metadata.Image) ([]metadata.Record, error) {
		if br, ok := im.Broker(brokerID); !ok || br.Epoch != brokerEpoch {
			return nil, kerr.StaleBrokerEpoch
		}
		start = im.NextProducerID()
		return []metadata.Record{metadata.AllocateProducerIDs{NextID: start + producer.DefaultIDBlockSize}}, nil
	})
	if err != nil {
		return 0, 0, err
	}
	return start, producer.DefaultIDBlockSize, nil
}

// connClosed is told when any controller-listener connection closes; if
// it carried a broker's heartbeats, that broker is fenced at once.
func (c *controllerService) connClosed(conn api.ConnID) {
	c.mu.Lock()
	var gone []int32
	for id, sc := range c.sessionConn {
		if sc == conn && id != c.b.cfg.NodeID {
			gone = append(gone, id)
			delete(c.sessionConn, id)
			c.lastSeen[id] = time.Time{}
		}
	}
	c.mu.Unlock()
	if len(gone) > 0 {
		c.b.log.Info("broker session connection closed; fencing it now", "brokers", gone)
		c.poke()
	}
}

// loop fences brokers whose sessions expired and elects leaders for
// partitions that have none.
func (c *controllerService) loop() {
	defer c.b.bgWG.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	rebalance := time.NewTicker(max(c.b.cfg.LeaderImbalanceCheckInterval, time.Second))
	defer rebalance.Stop()
	for {
		select {
		case <-c.b.stop:
			return
		case <-t.C:
		case <-c.wake:
		case <-rebalance.C:
			if c.isActive() && c.b.cfg.AutoLeaderRebalanceEnable {
				c.preferredElection()
			}
		}
		if !c.isActive() {
			continue
		}
		c.probeUnseen()
		c.fenceExpired()
	}
}

// probeUnseen dials the controller endpoint (a broker-only node: its
// first registered endpoint) of brokers that have not heartbeated to this
// controller yet. A refused connection means no process is listening
// there: the broker is dead and need not be waited for (its session would
// expire only after broker.session.timeout.ms).
func (c *controllerService) probeUnseen() {
	if !c.isActive() {
		return
	}
	c.mu.Lock()
	var unseen []int32
	for _, br := range c.b.Image().Brokers() {
		if _, ok := c.sessionConn[br.ID]; !ok && br.ID != c.b.cfg.NodeID && !br.Fenced {
			unseen = append(unseen, br.ID)
		}
	}
	c.mu.Unlock()
	for _, id := range unseen {
		addr, ok := c.b.probeAddr(id)
		if !ok {
			continue
		}
		d := net.Dialer{Timeout: 200 * time.Millisecond}
		if ip := c.b.cfg.OutboundBindAddress; ip != nil {
			d.LocalAddr = &net.TCPAddr{IP: ip}
		}
		nc, err := d.Dial("tcp", addr)
		if err == nil {
			nc.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			c.b.log.Info("broker's controller port refuses connections; treating it as dead", "broker", id)
			c.mu.Lock()
			c.lastSeen[id] = time.Time{}
			c.mu.Unlock()
		}
	}
}

func (c *controllerService) fenceExpired() {
	timeout := c.b.cfg.BrokerSessionTimeout
	now := time.Now()
	c.mu.Lock()
	var expired []int32
	for _, br := range c.b.Image().Brokers() {
		if br.Fenced || br.ID == c.b.cfg.NodeID {
			continue
		}
		seen, ok := c.lastSeen[br.ID]
		if !ok {
			c.lastSeen[br.ID] = now
			continue
		}
		if now.Sub(seen) > timeout {
			expired = append(expired, br.ID)
		}
	}
	c.mu.Unlock()
	for _, id := range expired {
		im := c.b.Image()
		recs, err := controller.FenceBroker(im, id)
		if err == nil {
			var next *metadata.Image
			if next, err = im.Apply(recs...); err == nil {
				recs = append(recs, controller.ElectLeaderless(next, c.uncleanAllowed)...)
				err = c.b.commit(recs)
			}
		}
		if err != nil {
			c.b.log.Warn("fencing broker failed", "broker", id, "err", err)
			continue
		}
		c.b.log.Info("fenced broker", "broker", id)
		c.b.metrics.IncLeaderElection(false)
	}
	// Partitions left without a leader (a controller change in the middle
	// of an election, an unclean topic whose replica came back) get one.
	if recs := controller.ElectLeaderless(c.b.Image(), c.uncleanAllowed); len(recs) > 0 {
		if err := c.b.commit(recs); err != nil {
			c.b.log.Warn("electing leaders failed", "err", err)
		}
	}
}

// probeAddr is where a broker's process listens: its controller endpoint
// if it is a voter, else the first endpoint it registered.
func (b *Broker) probeAddr(id int32) (string, bool) {
	if addr, ok := b.voterAddr(id); ok {
		return addr, true
	}
	br, ok := b.Image().Broker(id)
	if !ok || len(br.Endpoints) == 0 {
		return "", false
	}
	return endpointOf(br, br.Endpoints[0].Listener)
}

// voterAddr is the controller endpoint of a node.
func (b *Broker) voterAddr(id int32) (string, bool) {
	i := slices.IndexFunc(b.voters, func(v config.Voter) bool { return v.ID == id })
	if i < 0 {
		return "", false
	}
	return b.voters[i].Addr(), true
}

// preferredElection moves leadership back to each partition's first
// replica where it is alive and in the ISR (auto.leader.rebalance.enable):
// after failures and restarts, leaders would otherwise pile up on the
// brokers that stayed up.
func (c *controllerService) preferredElection() {
	recs := controller.PreferredLeaderElection(c.b.Image())
	if len(recs) == 0 {
		return
	}
	if err := c.b.commit(recs); err != nil {
		c.b.log.Warn("preferred leader election failed", "err", err)
		return
	}
	c.b.log.Info("moved leaderships back to preferred replicas", "partitions", len(recs))
}
