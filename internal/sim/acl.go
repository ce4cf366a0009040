package sim

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

// With Options.ACLs the brokers run the StandardAuthorizer: the nodes'
// own requests carry the broker principal, every client is the super
// user User:sim, except an ACL prober, User:acl-probe, whose right to
// write the topic an ACL toggler grants and revokes through the
// controller (CreateAcls' and DeleteAcls' decisions, committed to the
// metadata log like any other) while faults run. The checker requires
// that each of the prober's Produce requests is answered as the image of
// the broker that served it said when the request arrived: written only
// if that image allowed it, refused with TOPIC_AUTHORIZATION_FAILED only
// if it did not. The image is read independently of the authorizer: the
// toggler's binding is the only ACL for the prober, so allowed means that
// binding is in the image.

const (
	simUser         = "sim"
	aclProbeUser    = "acl-probe"
	aclProbeIndex   = 300
	aclToggleMinGap = 200 * time.Millisecond
	aclToggleMaxGap = 900 * time.Millisecond
)

// aclProbeEndpoint is the prober's network endpoint; its metadata
// requests go from the next one, a super user, so that it learns leaders
// whatever the ACLs say.
var aclProbeEndpoint = int32(clientEndpointBase + aclProbeIndex)

// principalOf is who a request from endpoint from is.
func (c *Cluster) principalOf(from int32) api.Principal {
	switch {
	case from < clientEndpointBase:
		return api.BrokerPrincipal
	case from == aclProbeEndpoint:
		return authz.Principal{Type: "User", Name: aclProbeUser}
	}
	return authz.Principal{Type: "User", Name: simUser}
}

// aclProbeBinding is the ACL the toggler adds and removes.
func aclProbeBinding() authz.ACL {
	return authz.ACL{ResourceType: authz.ResourceTopic, ResourceName: topicName, PatternType: authz.PatternLiteral,
		Principal: "User:" + aclProbeUser, Host: authz.Wildcard, Operation: authz.OpWrite, Permission: authz.PermissionAllow}
}

// probeMayWrite reads an image as the checker's model: the prober may
// write exactly when the toggler's binding is there.
func probeMayWrite(im *metadata.Image) bool {
	want := aclProbeBinding()
	for _, a := range im.ACLs().All() {
		a.ID = ""
		if a == want {
			return true
		}
	}
	return false
}

// aclToggler grants and revokes the prober's right to write, through
// the active controller.
type aclToggler struct {
	c       *Cluster
	pending bool
	next    uint64 // ACL ids
}

func (t *aclToggler) start() { t.c.s.after(t.c.s.between(aclToggleMinGap, aclToggleMaxGap), t.loop) }

func (t *aclToggler) loop() {
	c := t.c
	if c.stopped || c.healed {
		return
	}
	c.s.after(c.s.between(aclToggleMinGap, aclToggleMaxGap), t.loop)
	p := c.activeController()
	if p == nil || t.pending || c.topicID.IsZero() {
		return
	}
	t.pending = true
	grant := !probeMayWrite(p.image)
	what := "acl revoke"
	if grant {
		what = "acl grant"
	}
	t.next++
	id := fmt.Sprintf("sim-acl-%d", t.next)
	p.decide(what, func(im *metadata.Image) ([]metadata.Record, error) {
		if grant {
			a := aclProbeBinding()
			a.ID = id
			recs, errs := controller.CreateACLs(im, []authz.ACL{a})
			return recs, errs[0]
		}
		principal, name := "User:"+aclProbeUser, topicName
		recs, _, errs := controller.DeleteACLs(im, []authz.Filter{{ResourceType: authz.ResourceTopic, ResourceName: &name,
			PatternType: authz.PatternLiteral, Principal: &principal, Operation: authz.OpAny, Permission: authz.PermissionAny}})
		return recs, errs[0]
	}, func(err error) {
		t.pending = false
		if err != nil {
			c.tracef("%s failed: %v", what, err)
		}
	})
}

// aclProber writes one record at a time, non-idempotent acks=1, without
// retrying: each answer is one authorization decision to check.
type aclProber struct {
	c     *Cluster
	lc    *leaderCache
	busy  bool
	count int
}

func (pr *aclProber) start() { pr.c.s.after(pr.c.s.between(time.Second, 2*time.Second), pr.loop) }

func (pr *aclProber) loop() {
	c := pr.c
	if c.stopped || c.healed {
		return
	}
	c.s.after(c.s.between(20*time.Millisecond, 120*time.Millisecond), pr.loop)
	if pr.busy {
		return
	}
	part := int32(c.s.rng.IntN(c.opts.Partitions))
	leader, ok := pr.lc.leader(part)
	if !ok {
		pr.lc.refresh()
		return
	}
	pr.count++
	v := fmt.Sprintf("acl-%d", pr.count)
	recs := []*sentRecord{c.check.sent(v, part, ProducerSpec{Acks: 1})}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = 1
	req.TimeoutMillis = int32(produceTimeout.Milliseconds())
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topicName
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = part
	p.Records = batch.Build([][]byte{[]byte(v)}, c.nowMs())
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	pr.busy = true
	c.call(aclProbeEndpoint, leader, req, produceTimeout+rpcTimeout, func(resp kmsg.Response, err error) {
		pr.busy = false
		if err != nil {
			return
		}
		r := resp.(*kmsg.ProduceResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			c.violation("malformed produce answer %+v", r)
			return
		}
		rp := r.Topics[0].Partitions[0]
		if rp.ErrorCode == 0 {
			c.check.acked(recs, rp.BaseOffset, leader)
			return
		}
		pr.lc.forget(part)
	})
}

// checkAuthorized wraps the answer to a request node n is about to serve
// from endpoint from: for the prober's Produce, the answer must be what
// im, n's image when the request arrived, allows.
func (n *node) checkAuthorized(from int32, req kmsg.Request, im *metadata.Image, respond api.Respond) api.Respond {
	if !n.c.opts.ACLs || from != aclProbeEndpoint || req.Key() != kmsg.Produce.Int16() {
		return respond
	}
	allowed := probeMayWrite(im)
	version := im.Version()
	return func(resp kmsg.Response) {
		if r, ok := resp.(*kmsg.ProduceResponse); ok && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			code := r.Topics[0].Partitions[0].ErrorCode
			switch {
			case code == 0 && !allowed:
				n.c.violation("%s wrote for %s, which its image (version %d) did not allow", n, aclProbeUser, version)
			case code == kerr.TopicAuthorizationFailed.Code && allowed:
				n.c.violation("%s refused %s, whom its image (version %d) allowed to write", n, aclProbeUser, version)
			case code == 0:
				n.c.check.stats.ACLAllowed++
			case code == kerr.TopicAuthorizationFailed.Code:
				n.c.check.stats.ACLDenied++
			}
		}
		respond(resp)
	}
}
