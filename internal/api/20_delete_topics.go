package api

// DeleteTopics: versions 1-6. v6 names topics by name or by id.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 20, MinVersion: 1, MaxVersion: 6, Handle: handleDeleteTopics, Blocking: true, Forwardable: true})
}

func handleDeleteTopics(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{name: t.Topic, id: t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: kmsg.StringPtr(n)})
		}
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic = tg.name
		st.TopicID = tg.id
		im := s.Backend.Image()
		var (
			t  *metadata.Topic
			ok bool
		)
		if tg.name != nil && *tg.name != "" {
			t, ok = im.Topic(*tg.name)
		} else {
			t, ok = im.TopicByID(metadata.TopicID(tg.id))
		}
		checked := ""
		if ok {
			checked = t.Name
		} else if tg.name != nil {
			checked = *tg.name
		}
		if checked != "" && !s.allowed(r, authz.OpDelete, authz.ResourceTopic, checked) {
			// Refused before its existence is told.
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if !ok {
			if tg.name == nil || *tg.name == "" {
				st.ErrorCode = kerr.UnknownTopicID.Code
			} else {
				st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		name := t.Name
		st.Topic = &name
		st.TopicID = t.ID
		if !s.Backend.Config().DeleteTopicEnable {
			// Kafka checks this where the topic is known, so an unknown
			// topic still says it is unknown.
			st.ErrorCode = kerr.TopicDeletionDisabled.Code
			if req.Version >= 5 {
				msg := "topic deletion is disabled on this cluster (delete.topic.enable=false)"
				st.ErrorMessage = &msg
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		recs, err := controller.DeleteTopic(im, t.Name)
		if err == nil {
			err = s.Backend.Commit(recs)
		}
		st.ErrorCode = ErrorCode(err)
		if req.Version >= 5 {
			st.ErrorMessage = ErrorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}
