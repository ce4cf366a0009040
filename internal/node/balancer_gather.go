package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/balancer"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/metadata"
)

// The automatic balancer's disk reports: when a balance is due the
// active controller's core asks for every unfenced broker's log
// directories (ctrlcore.Ready.DescribeLogDirs); this asks each broker
// with DescribeLogDirs v4 over its inter-broker listener, as Cruise
// Control's and Kafka's admin tools do, and hands the answer back to the
// core, which decides. Its own broker is read in process.

// askBrokerTimeout bounds one broker's dial and answer to the balancer's
// requests; the core gives up on a DescribeLogDirs round after its own
// timeout as well.
const askBrokerTimeout = 5 * time.Second

// errNoInterBrokerListener: a controller-only node without
// inter.broker.listener.name has no listener to reach the brokers on.
var errNoInterBrokerListener = errors.New("this controller-only node has no inter.broker.listener.name to reach the brokers on")

// gatherLogDirs asks broker id and reports the outcome to the core.
func (c *controllerService) gatherLogDirs(id int32) {
	defer c.b.bgWG.Done()
	r, err := c.b.logDirsOf(id)
	if err != nil {
		c.b.log.Debug("balancer: cannot read a broker's log directories", "broker", id, "err", err)
	}
	c.Step(func(core *ctrlcore.Core, now time.Time, _ *metadata.Image) ctrlcore.Ready {
		return core.LogDirsReported(now, id, r)
	})
}

// logDirsOf is broker id's DescribeLogDirs answer as the balancer reads
// it.
func (b *Broker) logDirsOf(id int32) (*balancer.Report, error) {
	if id == b.cfg.NodeID && b.cfg.InterBrokerListenerName != "" {
		var rb balancer.ReportBuilder
		for _, d := range b.describeLogDirs() {
			rb.Dir(d.Dir, d.TotalBytes, d.UsableBytes, d.Err != nil)
			if d.Err == nil {
				for _, p := range d.Partitions {
					rb.Replica(p.Topic, p.Partition, p.Size, p.IsFuture)
				}
			}
		}
		r := rb.Report()
		return &r, nil
	}
	resp, err := b.askBroker(id, ctrlcore.LogDirsRequest())
	if err != nil {
		return nil, fmt.Errorf("DescribeLogDirs of broker %d: %w", id, err)
	}
	r := ctrlcore.ReportOf(resp.(*kmsg.DescribeLogDirsResponse))
	return &r, nil
}

// askBroker sends broker id one request over its inter-broker listener,
// as an admin client would, and returns the answer.
func (b *Broker) askBroker(id int32, req kmsg.Request) (kmsg.Response, error) {
	listener := b.cfg.BrokerDialListener
	if listener == "" {
		return nil, errNoInterBrokerListener
	}
	br, ok := b.Image().Broker(id)
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered", id)
	}
	ep, ok := endpointOf(br, listener)
	if !ok {
		return nil, fmt.Errorf("broker %d has no %s endpoint", id, listener)
	}
	ctx, cancel := context.WithTimeout(context.Background(), askBrokerTimeout)
	defer cancel()
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := dialCluster(ctx, b.cfg, b.cfg.OutboundBindAddress, listener, ep, fmt.Sprintf("skein-balancer-%d", b.cfg.NodeID))
	if err != nil {
		return nil, fmt.Errorf("dial broker %d: %w", id, err)
	}
	defer conn.Close()
	return conn.Request(ctx, req)
}

// moveLogDir sends the balancer's move between broker m.Broker's log
// directories as AlterReplicaLogDirs, as Cruise Control does; its own
// broker's is served in process. The outcome is only logged: the next
// round's DescribeLogDirs shows the move (a future log) or its absence,
// and decides again.
func (c *controllerService) moveLogDir(m balancer.DirMove) {
	defer c.b.bgWG.Done()
	err := c.b.alterLogDirOf(m)
	if err != nil {
		c.b.log.Info("balancer: a move between log directories did not start", "move", m.String(), "err", err)
	}
}

func (b *Broker) alterLogDirOf(m balancer.DirMove) error {
	if m.Broker == b.cfg.NodeID && b.cfg.InterBrokerListenerName != "" {
		return b.alterReplicaLogDir(m.Topic, m.Partition, m.To)
	}
	resp, err := b.askBroker(m.Broker, ctrlcore.AlterLogDirRequest(m))
	if err != nil {
		return fmt.Errorf("AlterReplicaLogDirs of broker %d: %w", m.Broker, err)
	}
	return ctrlcore.AlterLogDirOutcome(resp.(*kmsg.AlterReplicaLogDirsResponse))
}
