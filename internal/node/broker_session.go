package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/rpc"
)

// controllerRPCTimeout bounds one request to the controller.
const controllerRPCTimeout = 10 * time.Second

// controllerClient keeps one connection to the active controller's
// controller listener, redialled when the controller changes or the
// connection breaks.
type controllerClient struct {
	b    *Broker
	mu   sync.Mutex
	id   int32
	conn *rpc.Conn
}

// request sends req to the active controller.
func (cc *controllerClient) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	conn, err := cc.connect(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := conn.Request(ctx, req)
	if err != nil {
		cc.drop(conn)
		return nil, err
	}
	return resp, nil
}

func (cc *controllerClient) connect(ctx context.Context) (*rpc.Conn, error) {
	id := cc.b.controllerID.Load()
	if id < 0 {
		return nil, fmt.Errorf("%w: no active controller known", kerr.NotController)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.conn != nil && cc.id == id {
		select {
		case <-cc.conn.Done():
		default:
			return cc.conn, nil
		}
	}
	if cc.conn != nil {
		cc.conn.Close()
		cc.conn = nil
	}
	addr, ok := cc.b.voterAddr(id)
	if !ok {
		return nil, fmt.Errorf("controller %d is not among controller.quorum.voters", id)
	}
	conn, err := dialCluster(ctx, cc.b.cfg, cc.b.cfg.OutboundBindAddress, controllerListener(cc.b.cfg), addr, fmt.Sprintf("skein-broker-%d", cc.b.cfg.NodeID))
	if err != nil {
		return nil, err
	}
	cc.conn, cc.id = conn, id
	return conn, nil
}

func (cc *controllerClient) drop(conn *rpc.Conn) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	conn.Close()
	if cc.conn == conn {
		cc.conn = nil
	}
}

// closeControllerClients closes every connection to the controller.
func (b *Broker) closeControllerClients() {
	b.ctrl.close()
	b.ctrlISR.close()
	b.ctrlForward.close()
}

func (cc *controllerClient) close() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.conn != nil {
		cc.conn.Close()
		cc.conn = nil
	}
}

// sessionLoop registers this broker with the active controller and keeps
// its session alive with heartbeats, re-registering whenever the
// controller no longer knows this incarnation.
func (b *Broker) sessionLoop() {
	defer b.bgWG.Done()
	sess := ctrlcore.NewBrokerSession(b.cfg.NodeID, b.previousCleanEpoch)
	interval := max(b.cfg.BrokerHeartbeatInterval, 10*time.Millisecond)
	retry := time.NewTimer(0)
	defer retry.Stop()
	// A stop ends the step in flight (a registration waiting for the
	// image, say) rather than wait out controllerRPCTimeout.
	stopCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-stopCtx.Done():
		}
	}()
	for {
		select {
		case <-b.stop:
			return
		case <-b.controllerChanged:
			// Tell a new controller at once that this broker is alive.
		case <-retry.C:
		}
		wait := interval
		err := b.sessionStep(stopCtx, sess)
		if b.shuttingDown.Load() {
			b.reportShutdownHeartbeat(err)
		}
		if err != nil {
			if !errors.Is(err, kerr.NotController) {
				b.log.Debug("controller session", "err", err)
			}
			wait = min(interval, 100*time.Millisecond)
		}
		if !retry.Stop() {
			select {
			case <-retry.C:
			default:
			}
		}
		retry.Reset(wait)
	}
}

// sessionStep registers if needed, else heartbeats once
// (ctrlcore.BrokerSession decides which and what the answer means).
func (b *Broker) sessionStep(parent context.Context, sess *ctrlcore.BrokerSession) error {
	ctx, cancel := context.WithTimeout(parent, controllerRPCTimeout)
	defer cancel()
	if req := sess.Next(b.Image(), b.shuttingDown.Load(), b.registration); req != nil {
		resp, err := b.ctrl.request(ctx, req)
		if reg, ok := resp.(*kmsg.BrokerRegistrationResponse); ok && err == nil && reg.ErrorCode == kerr.InconsistentClusterID.Code {
			b.noteForeignCluster(fmt.Sprintf("the active controller (node %d)", b.controllerID.Load()), api.TaggedClusterID(reg.UnknownTags), b.Image().ClusterID())
		}
		out := sess.Answered(req, resp, err)
		if out.Stale {
			b.brokerEpoch.Store(-1)
			b.notifyImageChange()
		}
		if out.ShouldShutdown {
			b.shutdownApproved()
		}
		if out.Err != nil {
			return out.Err
		}
	}
	if !sess.Awaiting() {
		return nil
	}
	// A granted registration counts once this node's image holds it:
	// clients are then served from an image at least as new as the
	// registration. Partitions take their roles only from such an image
	// too (reconcilePartitions and metadata.Image.ReplicaRole), also when
	// a reconcile pass started on an older image sees the epoch stored.
	if err := b.waitImage(ctx, sess.Observe); err != nil {
		sess.Abandon() // register again
		return err
	}
	epoch := sess.Epoch()
	b.brokerEpoch.Store(epoch)
	if err := b.writeShutdownState(shutdownState{Epoch: epoch, BootID: b.bootID}); err != nil {
		// The file keeps an older epoch, which the controller reads as an
		// unclean stop: only write.caching ELRs are at stake.
		b.log.Warn("recording the broker epoch failed", "err", err)
	}
	b.notifyImageChange() // partitions may now take their roles
	b.log.Info("registered with the controller", "controller", b.controllerID.Load(), "broker_epoch", epoch)
	b.registeredOnce.Do(func() { close(b.registered) })
	return nil
}

// registration is what this broker registers with.
func (b *Broker) registration() ctrlcore.Registration {
	reg := ctrlcore.Registration{ClusterID: b.Image().ClusterID(), Incarnation: b.incarnation, Rack: b.cfg.Rack, LogDirs: b.logDirIDs}
	if b.cfg.LogOpenFilesPerReplica > 0 {
		b.partsMu.RLock()
		replicas := len(b.parts)
		b.partsMu.RUnlock()
		open, limit, ok := b.openFiles()
		reg.ReplicaCapacity = replicaCapacity(open, limit, replicas, b.cfg.LogOpenFilesPerReplica, ok)
		if reg.ReplicaCapacity > 0 {
			reg.OpenFilesLimit = int32(min(limit, math.MaxInt32))
		}
	}
	for _, l := range b.advertised() {
		reg.Listeners = append(reg.Listeners, metadata.Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port)})
	}
	return reg
}

// shutdownApproved is called when the controller says every leadership
// has moved away.
func (b *Broker) shutdownApproved() {
	b.shutdownOnce.Do(func() { close(b.shutdownOK) })
}

// controlledShutdown asks the controller to move this broker's
// leaderships elsewhere before it stops, so clients see a leader change
// instead of errors (SIGTERM, rolling restarts). It gives up after
// timeout: a controller that cannot be reached must not stop a shutdown.
func (b *Broker) controlledShutdown(timeout time.Duration) {
	if !b.canHandOver() {
		return
	}
	b.shuttingDown.Store(true)
	select {
	case b.controllerChanged <- struct{}{}: // heartbeat now
	default:
	}
	// The other brokers may begin their own controlled shutdowns
	// meanwhile (SIGTERM to all at once): once none is left active,
	// nothing can be handed over and the wait ends.
	ctx, cancel := context.WithTimeout(b.stopCtx, timeout)
	defer cancel()
	nobodyLeft := make(chan struct{})
	go func() {
		if b.waitImage(ctx, func(im *metadata.Image) bool { return !ctrlcore.HandoverPossible(im, b.cfg.NodeID) }) == nil {
			close(nobodyLeft)
		}
	}()
	select {
	case <-b.shutdownOK:
		b.log.Info("controlled shutdown: leaderships moved")
	case <-nobodyLeft:
		b.log.Info("controlled shutdown: no other broker is active to take over; stopping")
	case <-b.shutdownUnreachable:
		b.log.Warn("controlled shutdown: no controller answers; stopping anyway")
	case <-ctx.Done():
		b.log.Warn("controlled shutdown timed out; stopping anyway", "timeout", timeout)
	}
}

// canHandOver reports whether a controlled shutdown can move anything:
// this node is a registered broker and another broker is active
// (ctrlcore.HandoverPossible).
func (b *Broker) canHandOver() bool {
	return b.cfg.HasRole(config.RoleBroker) && b.brokerEpoch.Load() >= 0 && ctrlcore.HandoverPossible(b.Image(), b.cfg.NodeID)
}

// shutdownGiveUpAfter is how long a stopping broker keeps asking an
// unreachable controller (no quorum, say) before it stops anyway.
const shutdownGiveUpAfter = 2 * time.Second

// reportShutdownHeartbeat tracks heartbeats during a controlled shutdown:
// failing ones for longer than shutdownGiveUpAfter end the wait.
func (b *Broker) reportShutdownHeartbeat(err error) {
	if err == nil {
		b.shutdownFailingSince = time.Time{}
		return
	}
	if b.shutdownFailingSince.IsZero() {
		b.shutdownFailingSince = time.Now()
		return
	}
	if time.Since(b.shutdownFailingSince) > shutdownGiveUpAfter {
		b.shutdownUnreachableOnce.Do(func() { close(b.shutdownUnreachable) })
	}
}
