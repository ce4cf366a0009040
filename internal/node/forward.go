package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
)

// imageVersionTag is the tagged field in which a controller tells a
// forwarding broker which metadata version holds the outcome of its
// request, so the broker answers only once its own image has it (a client
// that creates a topic and then asks this broker for Metadata sees it).
const imageVersionTag = 0x5E11

// forward sends an admin request to the active controller and answers
// with its response once this node's image has caught up to it.
func (b *Broker) forward(r *api.Request, respond api.Respond) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	fail := func(err error) {
		resp := r.Body.ResponseKind()
		fillTopLevelError(resp, r.Body, api.ErrorCode(err))
		respond(resp)
	}
	spec, _ := api.Lookup(r.Body.Key())
	var resp kmsg.Response
	var err error
	// Retry until the deadline while there is no controller to answer or
	// the one asked has just lost its leadership (a NOT_CONTROLLER inside
	// its answer): as Kafka's forwarding manager does, a broker never
	// hands NOT_CONTROLLER to a client, which could not act on it (clients
	// cannot reach controllers) and would retry forever or give up.
	for {
		req := r.Body
		if dt, ok := req.(*kmsg.DeleteTopicsRequest); ok && r.Version < 6 {
			// v6 names topics in a list of (name, id); earlier versions
			// in a list of names.
			for _, n := range dt.TopicNames {
				t := kmsg.NewDeleteTopicsRequestTopic()
				t.Topic = kmsg.StringPtr(n)
				dt.Topics = append(dt.Topics, t)
			}
			dt.TopicNames = nil
		}
		// Forward at our newest version: it is flexible, so the answer
		// can carry the version tag. The client's answer is re-encoded
		// at its own version by the connection writer.
		req.SetVersion(spec.MaxVersion)
		resp, err = b.ctrlForward.request(ctx, req)
		if err == nil && !answersNotController(resp) {
			break
		}
		if err == nil {
			err = fmt.Errorf("%w: the controller asked was no longer active", kerr.NotController)
		}
		select {
		case <-ctx.Done():
		case <-b.controllerChanged:
		case <-time.After(100 * time.Millisecond):
		}
		if ctx.Err() != nil {
			break
		}
	}
	r.Body.SetVersion(r.Version)
	if err != nil {
		b.log.Warn("could not forward an admin request to the active controller", "request", kmsg.NameForKey(r.Body.Key()), "err", err)
		// REQUEST_TIMED_OUT is what Kafka's forwarding answers when no
		// controller took the request in time; clients retry it.
		fail(fmt.Errorf("%w: forwarding to the controller: %v", kerr.RequestTimedOut, err))
		return
	}
	if v, ok := taggedImageVersion(resp); ok {
		if err := b.waitReconciled(ctx, v); err != nil {
			b.log.Warn("forwarded request committed, but this broker's metadata lags", "version", v, "err", err)
		}
	}
	respond(resp)
}

// answersNotController reports whether any topic or resource of a
// forwarded request's answer says NOT_CONTROLLER: the node asked stopped
// being the active controller before it decided.
func answersNotController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch rs := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		return anyCode(rs.Topics, nc, func(t kmsg.CreateTopicsResponseTopic) int16 { return t.ErrorCode })
	case *kmsg.DeleteTopicsResponse:
		return anyCode(rs.Topics, nc, func(t kmsg.DeleteTopicsResponseTopic) int16 { return t.ErrorCode })
	case *kmsg.CreatePartitionsResponse:
		return anyCode(rs.Topics, nc, func(t kmsg.CreatePartitionsResponseTopic) int16 { return t.ErrorCode })
	case *kmsg.AlterConfigsResponse:
		return anyCode(rs.Resources, nc, func(r kmsg.AlterConfigsResponseResource) int16 { return r.ErrorCode })
	case *kmsg.IncrementalAlterConfigsResponse:
		return anyCode(rs.Resources, nc, func(r kmsg.IncrementalAlterConfigsResponseResource) int16 { return r.ErrorCode })
	case *kmsg.CreateACLsResponse:
		return anyCode(rs.Results, nc, func(r kmsg.CreateACLsResponseResult) int16 { return r.ErrorCode })
	case *kmsg.DeleteACLsResponse:
		return anyCode(rs.Results, nc, func(r kmsg.DeleteACLsResponseResult) int16 { return r.ErrorCode })
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		return anyCode(rs.Results, nc, func(r kmsg.AlterUserSCRAMCredentialsResponseResult) int16 { return r.ErrorCode })
	case *kmsg.AlterClientQuotasResponse:
		return anyCode(rs.Entries, nc, func(e kmsg.AlterClientQuotasResponseEntry) int16 { return e.ErrorCode })
	case *kmsg.AlterPartitionAssignmentsResponse:
		return rs.ErrorCode == nc || slices.ContainsFunc(rs.Topics, func(t kmsg.AlterPartitionAssignmentsResponseTopic) bool {
			return anyCode(t.Partitions, nc, func(p kmsg.AlterPartitionAssignmentsResponseTopicPartition) int16 { return p.ErrorCode })
		})
	case *kmsg.UnregisterBrokerResponse:
		return rs.ErrorCode == nc
	case *kmsg.ElectLeadersResponse:
		return rs.ErrorCode == nc || slices.ContainsFunc(rs.Topics, func(t kmsg.ElectLeadersResponseTopic) bool {
			return anyCode(t.Partitions, nc, func(p kmsg.ElectLeadersResponseTopicPartition) int16 { return p.ErrorCode })
		})
	}
	return false
}

// anyCode reports whether any item's error code (code) is want.
func anyCode[T any](items []T, want int16, code func(T) int16) bool {
	return slices.ContainsFunc(items, func(t T) bool { return code(t) == want })
}

// tagImageVersion adds the image version to a controller's answer.
func tagImageVersion(resp kmsg.Response, version int64) {
	if tags := unknownTags(resp); tags != nil && resp.IsFlexible() {
		tags.Set(imageVersionTag, binary.BigEndian.AppendUint64(nil, uint64(version)))
	}
}

func taggedImageVersion(resp kmsg.Response) (int64, bool) {
	tags := unknownTags(resp)
	if tags == nil {
		return 0, false
	}
	var v int64
	found := false
	tags.Each(func(key uint32, val []byte) {
		if key == imageVersionTag && len(val) == 8 {
			v, found = int64(binary.BigEndian.Uint64(val)), true
		}
	})
	// The tag is ours, not the client's: remove it before answering.
	if found {
		*tags = kmsg.Tags{}
	}
	return v, found
}

// unknownTags reaches the top-level tagged fields of any kmsg response.
func unknownTags(resp kmsg.Response) *kmsg.Tags {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("UnknownTags")
	if !f.IsValid() || !f.CanAddr() {
		return nil
	}
	tags, ok := f.Addr().Interface().(*kmsg.Tags)
	if !ok {
		return nil
	}
	return tags
}

// fillTopLevelError answers every topic or resource of an admin request
// with one error code when the request could not be forwarded.
func fillTopLevelError(resp kmsg.Response, req kmsg.Request, code int16) {
	switch rq := req.(type) {
	case *kmsg.CreateTopicsRequest:
		rs := resp.(*kmsg.CreateTopicsResponse)
		for _, t := range rq.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = t.Topic, code
			rs.Topics = append(rs.Topics, st)
		}
	case *kmsg.DeleteTopicsRequest:
		rs := resp.(*kmsg.DeleteTopicsResponse)
		for _, n := range rq.TopicNames {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.ErrorCode = kmsg.StringPtr(n), code
			rs.Topics = append(rs.Topics, st)
		}
		for _, t := range rq.Topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode = t.Topic, t.TopicID, code
			rs.Topics = append(rs.Topics, st)
		}
	case *kmsg.CreatePartitionsRequest:
		rs := resp.(*kmsg.CreatePartitionsResponse)
		for _, t := range rq.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode = t.Topic, code
			rs.Topics = append(rs.Topics, st)
		}
	case *kmsg.AlterConfigsRequest:
		rs := resp.(*kmsg.AlterConfigsResponse)
		for _, r := range rq.Resources {
			st := kmsg.NewAlterConfigsResponseResource()
			st.ResourceType, st.ResourceName, st.ErrorCode = r.ResourceType, r.ResourceName, code
			rs.Resources = append(rs.Resources, st)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		rs := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for _, r := range rq.Resources {
			st := kmsg.NewIncrementalAlterConfigsResponseResource()
			st.ResourceType, st.ResourceName, st.ErrorCode = r.ResourceType, r.ResourceName, code
			rs.Resources = append(rs.Resources, st)
		}
	case *kmsg.CreateACLsRequest:
		rs := resp.(*kmsg.CreateACLsResponse)
		for range rq.Creations {
			st := kmsg.NewCreateACLsResponseResult()
			st.ErrorCode = code
			rs.Results = append(rs.Results, st)
		}
	case *kmsg.DeleteACLsRequest:
		rs := resp.(*kmsg.DeleteACLsResponse)
		for range rq.Filters {
			st := kmsg.NewDeleteACLsResponseResult()
			st.ErrorCode = code
			rs.Results = append(rs.Results, st)
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		rs := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
		users := map[string]bool{}
		add := func(name string) {
			if !users[name] {
				users[name] = true
				st := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				st.User, st.ErrorCode = name, code
				rs.Results = append(rs.Results, st)
			}
		}
		for _, d := range rq.Deletions {
			add(d.Name)
		}
		for _, u := range rq.Upsertions {
			add(u.Name)
		}
	case *kmsg.AlterClientQuotasRequest:
		rs := resp.(*kmsg.AlterClientQuotasResponse)
		for _, e := range rq.Entries {
			st := kmsg.NewAlterClientQuotasResponseEntry()
			st.ErrorCode = code
			for _, p := range e.Entity {
				se := kmsg.NewAlterClientQuotasResponseEntryEntity()
				se.Type, se.Name = p.Type, p.Name
				st.Entity = append(st.Entity, se)
			}
			rs.Entries = append(rs.Entries, st)
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		rs := resp.(*kmsg.AlterPartitionAssignmentsResponse)
		rs.ErrorCode = code
		for _, t := range rq.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			rs.Topics = append(rs.Topics, st)
		}
	case *kmsg.ElectLeadersRequest:
		rs := resp.(*kmsg.ElectLeadersResponse)
		rs.ErrorCode = code
		for _, t := range rq.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			rs.Topics = append(rs.Topics, st)
		}
	}
}
