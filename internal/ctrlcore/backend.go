package ctrlcore

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/metadata"
)

// Runtime runs the core's events: one at a time, each with the current
// time and the latest applied image, carrying out the Ready it returns.
type Runtime interface {
	Step(ev func(c *Core, now time.Time, im *metadata.Image) Ready)
}

// Backend is api.ControllerBackend over a Core, for every runtime: the
// handlers hand it their callbacks, and it answers once the decision is
// applied, so no controller handler blocks.
type Backend struct{ R Runtime }

var _ api.ControllerBackend = Backend{}

func (b Backend) RegisterBroker(req *kmsg.BrokerRegistrationRequest, conn api.ConnID, done func(int64, error)) {
	b.R.Step(func(c *Core, now time.Time, im *metadata.Image) Ready { return c.Register(now, im, req, conn, done) })
}

func (b Backend) BrokerHeartbeat(req *kmsg.BrokerHeartbeatRequest, conn api.ConnID, done func(api.BrokerHeartbeatResult, error)) {
	b.R.Step(func(c *Core, now time.Time, im *metadata.Image) Ready { return c.Heartbeat(now, im, req, conn, done) })
}

func (b Backend) AlterPartitions(reqs []api.AlterPartitionParams, done func([]api.AlterPartitionResult)) {
	b.R.Step(func(c *Core, now time.Time, im *metadata.Image) Ready { return c.AlterPartitions(now, im, reqs, done) })
}

func (b Backend) AllocateProducerIDs(brokerID int32, brokerEpoch int64, done func(int64, int32, error)) {
	b.R.Step(func(c *Core, now time.Time, im *metadata.Image) Ready {
		return c.AllocateProducerIDs(now, im, brokerID, brokerEpoch, done)
	})
}
