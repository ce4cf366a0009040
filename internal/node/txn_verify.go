package node

import (
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/txnverify"
)

// txnVerifier wraps the partition leader's transaction verification core
// (txnverify.Manager, KIP-890 part 1) with its mutex and one goroutine per
// request in flight (at most one per coordinator), over its own
// connections so that a marker write waiting for its high watermark never
// delays a verification.
type txnVerifier struct {
	b     *Broker
	conns *peerConns

	mu sync.Mutex
	m  *txnverify.Manager
}

func newTxnVerifier(b *Broker) *txnVerifier {
	return &txnVerifier{b: b, conns: newPeerConns(b, fmt.Sprintf("skein-txn-verify-%d", b.cfg.NodeID)),
		m: txnverify.New(txnverify.ConfigFor(b.cfg))}
}

func (v *txnVerifier) verify(req txnverify.Verification) {
	start, done := time.Now(), req.Done
	req.Done = func(errs []error) {
		code := int16(0)
		for _, err := range errs {
			if err != nil {
				code = api.ErrorCode(err)
				break
			}
		}
		v.b.metrics.ObserveTxnVerification(code, time.Since(start))
		done(errs)
	}
	v.ask(req)
}

// ask queues req for its coordinator as the image names it now (a
// retried add looks it up again).
func (v *txnVerifier) ask(req txnverify.Verification) {
	node, err := txnverify.CoordinatorFor(v.b.Image(), req.TransactionalID)
	v.mu.Lock()
	rd := v.m.Verify(req, node, err, time.Now().UnixMilli())
	v.mu.Unlock()
	v.carryOut(rd)
}

// carryOut completes the verifications of rd, then sends its requests,
// outside the lock. In that order: a request sent first could be answered
// and its produce appended before a completion here appends the same
// producer's earlier batch, which would then be out of sequence (seen
// under load in skein verify --workload txn: two pipelined Produce
// requests of one transactional producer to a partition new to its
// transaction, the second refused with OUT_OF_ORDER_SEQUENCE_NUMBER).
func (v *txnVerifier) carryOut(rd txnverify.Ready) {
	for _, c := range rd.Completions {
		c.Done(c.Errs)
	}
	for _, s := range rd.Sends {
		go v.send(s)
	}
	for _, r := range rd.Retries {
		time.AfterFunc(time.Duration(r.AfterMs)*time.Millisecond, func() { v.ask(r.V) })
	}
}

func (v *txnVerifier) send(s txnverify.Send) {
	resp, err := v.request(s)
	v.mu.Lock()
	rd := v.m.Answered(s.Node, s.ID, resp, err, time.Now().UnixMilli())
	v.mu.Unlock()
	v.carryOut(rd)
}

func (v *txnVerifier) request(s txnverify.Send) (*kmsg.AddPartitionsToTxnResponse, error) {
	conn, err := v.conns.get(s.Node)
	if err != nil {
		return nil, err
	}
	ctx, cancel := stopContext(v.b, markerTimeout)
	defer cancel()
	resp, err := conn.Request(ctx, s.Request)
	if err != nil {
		v.conns.drop(s.Node, conn)
		return nil, err
	}
	return resp.(*kmsg.AddPartitionsToTxnResponse), nil
}

// VerifyTxn is api.Backend's.
func (x backend) VerifyTxn(v txnverify.Verification) { x.b.txns.verifier.verify(v) }

// StartTxnVerification is api.Backend's: through the partition's replica
// core.
func (x backend) StartTxnVerification(topic metadata.TopicID, index int32, producerID int64, epoch int16, tv2 bool) (uint64, bool, error) {
	p := x.b.partition(topic, index)
	if p == nil {
		return 0, false, x.b.partitionError(topic, index)
	}
	return p.startTxnVerification(producerID, epoch, tv2)
}
