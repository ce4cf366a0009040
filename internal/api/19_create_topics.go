package api

// CreateTopics: versions 2-7. v4+ accepts -1 partitions / replication
// factor (broker defaults); v5+ returns the created topic's partition count,
// replication factor and configs; v7 returns the topic id. ValidateOnly runs
// every check and commits nothing.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 19, MinVersion: 2, MaxVersion: 7, Handle: handleCreateTopics, Blocking: true, Forwardable: true})
}

func handleCreateTopics(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	// validate_only decides each topic against an image holding the
	// topics validated before it, as a real creation decides each against
	// the image holding the ones committed before it: both answer a request
	// whose topics fit one by one but not together (a broker's replica
	// capacity) alike.
	var dry *metadata.Image
	if req.ValidateOnly {
		dry = s.Backend.Image()
	}
	seen := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions = -1
		st.ReplicationFactor = -1
		if seen[rt.Topic] > 1 {
			// Kafka refuses every copy of a topic named twice in one request.
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = kmsg.StringPtr("topic named more than once in the request")
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if !s.allowedCreateTopic(r, rt.Topic) {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			st.ErrorMessage = kmsg.StringPtr("CreateTopics needs CREATE on the cluster or the topic")
			resp.Topics = append(resp.Topics, st)
			continue
		}
		ct := controller.CreateTopicRequest{
			Name:              rt.Topic,
			NumPartitions:     rt.NumPartitions,
			ReplicationFactor: rt.ReplicationFactor,
			Configs:           map[string]string{},
		}
		if len(rt.ReplicaAssignment) > 0 {
			ct.Assignments = make(map[int32][]int32, len(rt.ReplicaAssignment))
			for _, a := range rt.ReplicaAssignment {
				ct.Assignments[a.Partition] = a.Replicas
			}
		}
		for _, c := range rt.Configs {
			if c.Value != nil {
				ct.Configs[c.Name] = *c.Value
			}
		}
		id, err := s.createTopic(ct, &dry)
		if err != nil {
			st.ErrorCode = ErrorCode(err)
			st.ErrorMessage = ErrorMessage(err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = id
		if t, ok := s.Backend.Image().Topic(rt.Topic); ok && !req.ValidateOnly {
			st.NumPartitions = int32(len(t.Partitions))
			if len(t.Partitions) > 0 {
				st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
			}
			if entries, err := config.DescribeTopic(s.Backend.Config(), t.Configs); err == nil {
				st.Configs = createTopicConfigs(entries)
			}
		} else if req.ValidateOnly {
			st.NumPartitions = rt.NumPartitions
			st.ReplicationFactor = rt.ReplicationFactor
		}
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}

func createTopicConfigs(entries []config.ConfigEntry) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, e := range entries {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name = e.Name
		v := e.Value
		c.Value = &v
		c.ReadOnly = e.ReadOnly
		c.Source = int8(e.Source)
		out = append(out, c)
	}
	return out
}

// createTopic runs the controller's decision and commits its records; with
// *dry set (validate_only) it decides against *dry instead, commits
// nothing, and leaves *dry holding the topic.
func (s *Server) createTopic(ct controller.CreateTopicRequest, dry **metadata.Image) (metadata.TopicID, error) {
	cfg := s.Backend.Config()
	id := s.Backend.NewTopicID()
	im := s.Backend.Image()
	if *dry != nil {
		im = *dry
	}
	recs, err := controller.CreateTopic(im, ct, controller.Defaults{
		NumPartitions:     cfg.NumPartitions,
		ReplicationFactor: cfg.DefaultReplicationFactor,
	}, id, config.ValidateTopicOverrides)
	if err != nil {
		return metadata.TopicID{}, err
	}
	if *dry != nil {
		next, err := im.Apply(recs...)
		if err != nil {
			return metadata.TopicID{}, fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
		}
		*dry = next
		return metadata.TopicID{}, nil
	}
	if err := s.Backend.Commit(recs); err != nil {
		return metadata.TopicID{}, err
	}
	return id, nil
}

// autoCreateTopic creates a topic with broker defaults, as
// auto.create.topics.enable does for Metadata requests. The creation takes
// the path of a client's CreateTopics: decided here on the active
// controller, forwarded to it from any other broker (KIP-590), so every
// broker can auto-create, not only the controller. It returns once the
// decision is known and, when forwarded, once this broker's image has it.
// Only Metadata (a Blocking handler) calls it.
func (s *Server) autoCreateTopic(name string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	req.Topics = append(req.Topics, rt)
	answer := make(chan kmsg.Response, 1)
	s.Serve(&Request{Version: 7, ClientID: "skein-auto-create", Body: req}, func(r kmsg.Response) { answer <- r })
	resp, _ := (<-answer).(*kmsg.CreateTopicsResponse)
	if resp == nil || len(resp.Topics) != 1 {
		return fmt.Errorf("%w: auto-creating %s: no answer from the controller", kerr.LeaderNotAvailable, name)
	}
	t := resp.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		if t.ErrorMessage != nil {
			return fmt.Errorf("%w: auto-creating %s: %s", err, name, *t.ErrorMessage)
		}
		return fmt.Errorf("auto-creating %s: %w", name, err)
	}
	return nil
}
