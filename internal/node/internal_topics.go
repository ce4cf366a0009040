package node

import (
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
)

// internalTopic is one of Kafka's coordinator topics (__consumer_offsets,
// __transaction_state), created on the first FindCoordinator that needs
// it, once however many ask at the same time.
type internalTopic struct {
	b    *Broker
	name string
	// request is the creation: partitions, replication factor, configs.
	request func() (int32, int16, map[string]string)

	mu sync.Mutex
	// waiters wait for the one creation in flight (nil when none is).
	waiters []func(error)
}

// ensure calls done once this broker's image has the topic, creating it
// if need be.
func (it *internalTopic) ensure(done func(error)) {
	if _, ok := it.b.Image().Topic(it.name); ok {
		done(nil)
		return
	}
	it.mu.Lock()
	it.waiters = append(it.waiters, done)
	first := len(it.waiters) == 1
	it.mu.Unlock()
	if !first {
		return
	}
	go func() {
		err := it.create()
		it.mu.Lock()
		waiters := it.waiters
		it.waiters = nil
		it.mu.Unlock()
		for _, w := range waiters {
			w(err)
		}
	}()
}

// create sends the creation through the same path as a client's
// CreateTopics: decided by the active controller (forwarded to it from
// other brokers), answered once this broker's image has the topic.
func (it *internalTopic) create() error {
	partitions, rf, configs := it.request()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = int32(commitTimeout.Milliseconds())
	rt1 := kmsg.NewCreateTopicsRequestTopic()
	rt1.Topic, rt1.NumPartitions, rt1.ReplicationFactor = it.name, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt1.Configs = append(rt1.Configs, c)
	}
	req.Topics = append(req.Topics, rt1)
	answer := make(chan kmsg.Response, 1)
	it.b.api.Serve(&api.Request{Version: 7, ClientID: "skein-coordinator", Body: req}, func(r kmsg.Response) { answer <- r })
	resp := (<-answer).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		return fmt.Errorf("%w: creating %s: %d topics in the answer", kerr.CoordinatorNotAvailable, it.name, len(resp.Topics))
	}
	t := resp.Topics[0]
	switch err := kerr.ErrorForCode(t.ErrorCode); {
	case err == nil:
		it.b.log.Info("created an internal topic", "topic", it.name, "partitions", partitions, "replication_factor", rf)
		return nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return nil
	default:
		why := err.Error()
		if t.ErrorMessage != nil {
			why = *t.ErrorMessage
		}
		// Kafka answers COORDINATOR_NOT_AVAILABLE until enough brokers
		// are alive for the replication factor.
		return fmt.Errorf("%w: creating %s: %s", kerr.CoordinatorNotAvailable, it.name, why)
	}
}

// internalReplicationFactor is the replication factor an internal topic
// is created with. In a cluster of combined nodes every broker is a
// voter, so there can never be more brokers than voters: a larger factor
// could never be met (Kafka's default of 3 on a single broker would keep
// the coordinator unavailable forever). With dedicated controllers (this
// node is a broker only) the broker count is open, so Kafka's rule
// stands: wait until enough brokers are alive.
func (b *Broker) internalReplicationFactor(property string, rf int16) int16 {
	combined := b.cfg.HasRole(config.RoleController)
	if n := len(b.controllerVoters()); combined && n > 0 && int(rf) > n {
		b.log.Warn(property+" exceeds the number of nodes; using the node count", "configured", rf, "nodes", n)
		return int16(n)
	}
	return rf
}
