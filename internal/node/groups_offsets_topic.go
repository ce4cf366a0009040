package node

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/grouphost"
)

// Groups serves the group APIs through the shared adapter over this
// broker's coordinators.
func (x backend) Groups() api.GroupBackend { return grouphost.Backend{Hosts: x.b.groups} }

// EnsureOffsetsTopic is grouphost.Hosts'.
func (rt *groupRuntime) EnsureOffsetsTopic(done func(error)) { rt.ensureOffsetsTopic(done) }

// ensureOffsetsTopic creates __consumer_offsets once, however many
// FindCoordinator requests ask at the same time.
func (rt *groupRuntime) ensureOffsetsTopic(done func(error)) {
	if _, ok := rt.b.Image().Topic(api.OffsetsTopic); ok {
		done(nil)
		return
	}
	rt.mu.Lock()
	rt.createWaiters = append(rt.createWaiters, done)
	first := len(rt.createWaiters) == 1
	rt.mu.Unlock()
	if !first {
		return
	}
	go func() {
		err := rt.createOffsetsTopic()
		rt.mu.Lock()
		waiters := rt.createWaiters
		rt.createWaiters = nil
		rt.mu.Unlock()
		for _, w := range waiters {
			w(err)
		}
	}()
}

// createOffsetsTopic sends the creation through the same path as a
// client's CreateTopics: decided by the active controller (forwarded to
// it from other brokers), answered once this broker's image has the topic.
func (rt *groupRuntime) createOffsetsTopic() error {
	partitions, rf, configs := rt.offsetsTopicRequest()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = int32(commitTimeout.Milliseconds())
	rt1 := kmsg.NewCreateTopicsRequestTopic()
	rt1.Topic, rt1.NumPartitions, rt1.ReplicationFactor = api.OffsetsTopic, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt1.Configs = append(rt1.Configs, c)
	}
	req.Topics = append(req.Topics, rt1)
	answer := make(chan kmsg.Response, 1)
	rt.b.api.Serve(&api.Request{Version: 7, ClientID: "skein-group-coordinator", Body: req}, func(r kmsg.Response) { answer <- r })
	resp := (<-answer).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		return fmt.Errorf("%w: creating %s: %d topics in the answer", kerr.CoordinatorNotAvailable, api.OffsetsTopic, len(resp.Topics))
	}
	t := resp.Topics[0]
	switch err := kerr.ErrorForCode(t.ErrorCode); {
	case err == nil:
		rt.b.log.Info("created the offsets topic", "topic", api.OffsetsTopic, "partitions", partitions, "replication_factor", rf)
		return nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return nil
	default:
		why := err.Error()
		if t.ErrorMessage != nil {
			why = *t.ErrorMessage
		}
		// Kafka answers COORDINATOR_NOT_AVAILABLE until enough brokers
		// are alive for offsets.topic.replication.factor.
		return fmt.Errorf("%w: creating %s: %s", kerr.CoordinatorNotAvailable, api.OffsetsTopic, why)
	}
}
