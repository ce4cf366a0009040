package sim

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/txnverify"
)

// VerifyTxn is api.Backend's, as node's txnVerifier: the shared core
// batches the verifications per coordinator; requests cross the simulated
// network, and answers reach only the incarnation that asked (a crashed
// process's verifications die with it; a paused one's wait).
func (x backend) VerifyTxn(v txnverify.Verification) {
	x.p.askVerify(v)
}

// askVerify queues v for its coordinator as the image names it now (a
// retried add looks it up again).
func (p *process) askVerify(v txnverify.Verification) {
	if p.verifier == nil {
		p.verifier = txnverify.New(txnverify.ConfigFor(p.cfg))
	}
	node, err := txnverify.CoordinatorFor(p.image, v.TransactionalID)
	p.carryOutVerify(p.verifier.Verify(v, node, err, p.n.c.nowMs()))
	p.n.c.check.txnVerifyBound(p.verifier.Waiting())
}

func (p *process) carryOutVerify(rd txnverify.Ready) {
	n := p.n
	for _, s := range rd.Sends {
		inc := n.incarnation
		n.c.call(n.id, s.Node, s.Request, rpcTimeout, func(resp kmsg.Response, err error) {
			n.runIf(inc, func() {
				var r *kmsg.AddPartitionsToTxnResponse
				if err == nil {
					r = resp.(*kmsg.AddPartitionsToTxnResponse)
				}
				p.carryOutVerify(p.verifier.Answered(s.Node, s.ID, r, err, n.c.nowMs()))
			})
		})
	}
	for _, c := range rd.Completions {
		c.Done(c.Errs)
	}
	for _, r := range rd.Retries {
		inc := n.incarnation
		n.c.s.after(time.Duration(r.AfterMs)*time.Millisecond, func() { n.runIf(inc, func() { p.askVerify(r.V) }) })
	}
}

// StartTxnVerification is api.Backend's: through the replica core.
func (x backend) StartTxnVerification(id metadata.TopicID, index int32, producerID int64, epoch int16, tv2 bool) (uint64, bool, error) {
	r, err := x.replicaOf(id, index)
	if err != nil {
		return 0, false, err
	}
	guard, need, err := r.core.StartTxnVerification(producerID, epoch, tv2, r.nowMs())
	r.p.n.c.check.txnVerifyStarted(need)
	return guard, need, err
}
