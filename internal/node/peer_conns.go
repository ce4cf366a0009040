package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/skein-log/skein/internal/rpc"
)

// peerConns keeps one connection per broker, on its inter-broker
// listener, for one purpose (transaction markers, transaction
// verification): Kafka answers a connection's requests in order, so a
// slow request of one purpose must not hold another's back.
type peerConns struct {
	b        *Broker
	clientID string

	mu     sync.Mutex
	conns  map[int32]*rpc.Conn // by broker id
	closed bool                // the broker is stopping
}

func newPeerConns(b *Broker, clientID string) *peerConns {
	return &peerConns{b: b, clientID: clientID, conns: map[int32]*rpc.Conn{}}
}

// get is the connection to broker id, dialed once and kept.
func (bc *peerConns) get(id int32) (*rpc.Conn, error) {
	bc.mu.Lock()
	c := bc.conns[id]
	bc.mu.Unlock()
	if c != nil {
		select {
		case <-c.Done():
			bc.drop(id, c)
		default:
			return c, nil
		}
	}
	br, ok := bc.b.Image().Broker(id)
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered", id)
	}
	listener := bc.b.cfg.InterBrokerListenerName
	ep, ok := endpointOf(br, listener)
	if !ok {
		return nil, fmt.Errorf("broker %d has no %s endpoint", id, listener)
	}
	ctx, cancel := stopContext(bc.b, markerTimeout)
	defer cancel()
	c, err := dialCluster(ctx, bc.b.cfg, bc.b.cfg.OutboundBindAddress, listener, ep, bc.clientID)
	if err != nil {
		return nil, err
	}
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.closed {
		c.Close()
		return nil, fmt.Errorf("broker stopping")
	}
	if old := bc.conns[id]; old != nil {
		c.Close() // another caller dialed first
		return old, nil
	}
	bc.conns[id] = c
	return c, nil
}

// drop forgets (and closes) a connection that failed.
func (bc *peerConns) drop(id int32, c *rpc.Conn) {
	bc.mu.Lock()
	if bc.conns[id] == c {
		delete(bc.conns, id)
	}
	bc.mu.Unlock()
	c.Close()
}

// closeAll closes every connection; later gets fail.
func (bc *peerConns) closeAll() {
	bc.mu.Lock()
	conns := bc.conns
	bc.conns, bc.closed = map[int32]*rpc.Conn{}, true
	bc.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// stopContext bounds one dial or request by timeout and ends it when the
// broker stops.
func stopContext(b *Broker, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
