package api

// Produce: versions 0-13. v3 is the floor for v2 record batches (magic 2).
// v0-v2 are advertised because librdkafka (kcat, confluent-kafka) infers
// gzip and snappy support from the broker offering Produce v0: without it,
// it silently sends those codecs uncompressed. Those clients then produce
// with v3+; a request that really carries the old message formats (magic 0
// or 1) is answered UNSUPPORTED_FOR_MESSAGE_FORMAT per partition, as Kafka
// does for formats it no longer stores. v13 names topics by id.
//
// Every batch is validated before it reaches the log (produce_validate.go):
// size against max.message.bytes, magic, CRC-32C, every record decoded
// (decompressed through a window), record timestamps against
// message.timestamp.before/after.max.ms, and for a topic whose
// cleanup.policy includes compact, a key on every record; records a rule
// refuses are named in record_errors (KIP-467). acks=0 gets no response
// at all; acks=1 and acks=all are answered when the backend says the batch
// is as durable as the topic's contract requires.
//
// Transactional batches (KIP-98) need the request's transactional_id, and
// WRITE on it when an authorizer is set; control batches (markers) come
// only from the transaction coordinator through WriteTxnMarkers and are
// refused here with INVALID_RECORD, as Kafka refuses them from clients.
// With transaction.partition.verification.enable (KIP-890 part 1), a
// partition where the producer has no transaction open yet is appended
// only once the coordinator confirms the partition is in the producer's
// ongoing transaction (startTxnVerification, internal/txnverify).

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/txn"
	"github.com/skein-log/skein/internal/txnverify"
)

func init() {
	register(Spec{Key: 0, MinVersion: 0, MaxVersion: 13, Handle: handleProduce})
}

// maxProduceTimeout bounds how long a produce may wait for acks.
const maxProduceTimeout = 5 * time.Minute

func handleProduce(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acks := req.Acks
	if acks != 0 && acks != 1 && acks != -1 {
		fillProduceError(resp, req, kerr.InvalidRequiredAcks.Code)
		respond(resp)
		return
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 || timeout > maxProduceTimeout {
		timeout = maxProduceTimeout
	}

	// Lay the response out first so completions (possibly concurrent) only
	// fill in their own slot.
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	var (
		mu      sync.Mutex
		pending = 1 // held by this function until every partition is dispatched
	)
	finish := func() {
		mu.Lock()
		pending--
		done := pending == 0
		mu.Unlock()
		if !done {
			return
		}
		if acks == 0 {
			respond(nil)
			if produceFailed(resp) && r.CloseConn != nil {
				r.CloseConn()
			}
			return
		}
		addProduceLeaderHints(s, r, req, resp)
		respond(resp)
	}

	// A transactional producer needs WRITE on its transactional id, as in
	// Kafka (its transactional batches are then checked per partition by
	// the producer state).
	txnRefused := req.TransactionID != nil && !s.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, *req.TransactionID)
	im := s.Backend.Image()
	var parts []producePart
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := &resp.Topics[ti]
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		t, terr := s.lookupAuthorized(r, authz.OpWrite, im, req.Version >= 13, rt.Topic, rt.TopicID)
		if terr == nil && isInternalTopic(t.Name) {
			// As Kafka: only the coordinators write their own topics (not
			// through Produce); a client batch there would be replayed as
			// coordinator state.
			terr = fmt.Errorf("%w: cannot append to internal topic %s", kerr.InvalidTopicException, t.Name)
		}
		tc := s.Backend.Config().TopicDefaults
		if terr == nil {
			if c, err := s.Backend.TopicConfig(t); err == nil {
				tc = c
			}
		}
		rules := produceRules(tc, s.Backend.NowMs())
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := &st.Partitions[pi]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			if terr != nil {
				sp.ErrorCode = ErrorCode(terr)
				continue
			}
			if txnRefused {
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				continue
			}
			batches, err := validateProduceRecords(rp.Records, tc.MaxMessageBytes, rules, req.Version, req.TransactionID != nil)
			if err != nil {
				fillPartitionError(sp, err, req.Version)
				continue
			}
			parts = append(parts, producePart{
				params: ProduceParams{Topic: t.ID, Partition: rp.Partition, Batches: batches, Acks: acks, Timeout: timeout},
				name:   t.Name, sp: sp,
			})
		}
	}
	dispatch := func(pp producePart) {
		mu.Lock()
		pending++
		mu.Unlock()
		s.Backend.Produce(pp.params, func(res ProduceResult) {
			mu.Lock()
			sp := pp.sp
			sp.ErrorCode = ErrorCode(res.Err)
			if res.Err != nil && req.Version >= 8 {
				sp.ErrorMessage = ErrorMessage(res.Err)
			}
			sp.BaseOffset = res.BaseOffset
			sp.LogAppendTime = res.LogAppendTime
			sp.LogStartOffset = res.LogStartOffset
			mu.Unlock()
			finish()
		})
	}
	verifying := s.startTxnVerification(req, parts)
	for _, pp := range parts {
		if !pp.verify && !pp.refused {
			dispatch(pp)
		}
	}
	if len(verifying.Partitions) > 0 {
		mu.Lock()
		pending++
		mu.Unlock()
		waiting := make([]producePart, 0, len(verifying.Partitions))
		for _, pp := range parts {
			if pp.verify {
				waiting = append(waiting, pp)
			}
		}
		verifying.Done = func(errs []error) {
			for i, pp := range waiting {
				var err error
				if i < len(errs) {
					err = errs[i]
				}
				if err = txnverify.ProduceError(err, req.Version); err != nil {
					mu.Lock()
					fillPartitionError(pp.sp, err, req.Version)
					mu.Unlock()
					continue
				}
				dispatch(pp)
			}
			finish()
		}
		s.Backend.VerifyTxn(verifying)
	}
	finish()
}

// producePart is one partition of a Produce that passed validation.
type producePart struct {
	params ProduceParams
	name   string
	sp     *kmsg.ProduceResponseTopicPartition
	// verify: append only once the coordinator has verified the
	// partition (KIP-890 part 1).
	verify bool
	// refused: answered with an error before the append.
	refused bool
}

// startTxnVerification applies KIP-890 part 1
// (transaction.partition.verification.enable) to a transactional
// Produce's partitions: every append is made to check its verification
// guard, and the partitions where the producer has no transaction open
// yet are marked verify and returned as one verification for the
// producer's coordinator (Done left to the caller). Transactional
// batches of more than one producer id or epoch in one request are
// refused with INVALID_PRODUCER_ID_MAPPING, as Kafka refuses them: the
// coordinator can be asked about one producer only. A partition whose
// verification cannot start gets its error here.
//
// Produce v12+ with transaction.version 2 finalized is KIP-890 part 2's:
// the client sends no AddPartitionsToTxn, and the leader adds each
// partition to the transaction itself (Verification.Add) before the
// first batch of the producer's transaction at that epoch. The add is
// the protocol, so it is made whatever
// transaction.partition.verification.enable says.
func (s *Server) startTxnVerification(req *kmsg.ProduceRequest, parts []producePart) txnverify.Verification {
	v := txnverify.Verification{}
	tv2 := ProduceAddsPartitions(req.Version, s.Backend.Image())
	if req.TransactionID == nil || !tv2 && !s.Backend.Config().TransactionPartitionVerification {
		return v
	}
	v.Add = tv2
	v.TransactionalID, v.ProducerID = *req.TransactionID, -1
	type producerKey struct {
		id    int64
		epoch int16
	}
	var seen []producerKey
	txnal := make([]bool, len(parts))
	for i := range parts {
		parts[i].params.VerifyTxn = true
		for _, b := range parts[i].params.Batches {
			h, err := batch.ParseHeader(b)
			if err != nil || !h.IsTransactional() {
				continue
			}
			txnal[i] = true
			if k := (producerKey{h.ProducerID, h.ProducerEpoch}); !slices.Contains(seen, k) {
				seen = append(seen, k)
			}
		}
	}
	if len(seen) > 1 {
		for i := range parts {
			if txnal[i] {
				parts[i].refused = true
				fillPartitionError(parts[i].sp, fmt.Errorf("%w: transactional batches of %d producers in one request", kerr.InvalidProducerIDMapping, len(seen)), req.Version)
			}
		}
		return v
	}
	if len(seen) == 0 {
		return v
	}
	v.ProducerID, v.Epoch = seen[0].id, seen[0].epoch
	for i := range parts {
		if !txnal[i] {
			continue
		}
		pp := &parts[i]
		guard, need, err := s.Backend.StartTxnVerification(pp.params.Topic, pp.params.Partition, v.ProducerID, v.Epoch, tv2)
		switch {
		case err != nil:
			pp.refused = true
			fillPartitionError(pp.sp, err, req.Version)
		case need:
			pp.verify = true
			pp.params.VerificationGuard = guard
			// The append waits for the coordinator's answer, after this
			// handler returns, and the connection recycles the request's
			// frame then (a Produce frame goes back to the pool once its
			// handler returns): the batches must not point into it, or a
			// request read meanwhile overwrites them and the log gets its
			// bytes (seen as CRC mismatches in the log, and batches of
			// another producer refused INVALID_TXN_STATE).
			for j, b := range pp.params.Batches {
				pp.params.Batches[j] = slices.Clone(b)
			}
			v.Partitions = append(v.Partitions, txn.TopicPartition{Topic: pp.name, Partition: pp.params.Partition})
		}
	}
	return v
}

// ProduceAddsPartitions reports whether a Produce of version adds its
// transactional partitions to their transaction (KIP-890 part 2): v12+
// with transaction.version 2 finalized.
func ProduceAddsPartitions(version int16, im *metadata.Image) bool {
	return version >= 12 && im.TransactionVersion() >= 2
}

// lookupTopic finds a topic by name, or by id for versions that use ids.
func lookupTopic(im *metadata.Image, byID bool, name string, id [16]byte) (*metadata.Topic, error) {
	if byID {
		t, ok := im.TopicByID(metadata.TopicID(id))
		if !ok {
			return nil, kerr.UnknownTopicID
		}
		return t, nil
	}
	t, ok := im.Topic(name)
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	return t, nil
}

func fillProduceError(resp *kmsg.ProduceResponse, req *kmsg.ProduceRequest, code int16) {
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
}

// produceFailed reports whether any partition of a produce failed.
func produceFailed(resp *kmsg.ProduceResponse) bool {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return true
			}
		}
	}
	return false
}
