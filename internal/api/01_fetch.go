package api

// Fetch: versions 4-16. v4 is the floor for v2 record batches. v7+ has
// incremental fetch sessions (KIP-227, internal/fetchsession): epoch 0
// opens one, later fetches send only the partitions whose fetch state
// changed and get only those with news. v13+ names topics by id. v15 moves
// the replica id into ReplicaState.
//
// Consumers read only below the high watermark; read_committed ones
// (isolation_level 1) only below the last stable offset, and get the
// aborted transactions overlapping what they read, whose records they
// drop. Long polls wait inside the backend on partition events, never with
// a goroutine per request.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/fetchsession"
	"github.com/skein-log/skein/internal/metadata"
)

func init() {
	register(Spec{Key: 1, MinVersion: 4, MaxVersion: 16, Handle: handleFetch, ForControllers: true})
}

// maxFetchWait bounds a long poll whatever the client asks for.
const maxFetchWait = 30 * time.Second

// maxFetchResponseBytes bounds a response whatever the client asks for.
const maxFetchResponseBytes = 64 << 20

func handleFetch(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	replicaID := req.ReplicaID
	if req.Version >= 15 {
		replicaID = req.ReplicaState.ID
	}
	if req.ClusterID != nil && *req.ClusterID != s.Backend.Image().ClusterID() {
		// A replica of another cluster must never copy this log.
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		TagClusterID(&resp.UnknownTags, s.Backend.Image().ClusterID())
		respond(resp)
		return
	}
	if r.ControllerListener && IsMetadataLogFetch(req) {
		s.Backend.FetchMetadataLog(req, respond)
		return
	}
	if !s.Backend.Config().HasRole(config.RoleBroker) {
		// A controller-only node hosts no partitions.
		resp.ErrorCode = kerr.UnknownServerError.Code
		respond(resp)
		return
	}
	if req.IsolationLevel != ReadUncommitted && req.IsolationLevel != ReadCommitted {
		resp.ErrorCode = kerr.InvalidRequest.Code
		respond(resp)
		return
	}
	params := FetchParams{
		ReplicaID:      replicaID,
		IsolationLevel: req.IsolationLevel,
		MaxWait:        clampDuration(time.Duration(req.MaxWaitMillis)*time.Millisecond, 0, maxFetchWait),
		MinBytes:       req.MinBytes,
		MaxBytes:       req.MaxBytes,
		Recycle:        r.Recycle,
	}
	if params.MaxBytes <= 0 || params.MaxBytes > maxFetchResponseBytes {
		params.MaxBytes = maxFetchResponseBytes
	}

	byID := req.Version >= 13
	sessions := s.Backend.FetchSessions()
	sctx := sessions.Begin(sessionRequest(req, byID, replicaID >= 0))
	if sctx.Kind == fetchsession.Failed {
		resp.ErrorCode = sctx.ErrorCode
		respond(resp)
		return
	}

	// Read what the session decided (the request's partitions, or the
	// whole session for an incremental fetch); partitions that fail
	// lookup are answered here and not sent on.
	//
	// Each partition's answer is the backend's FetchResult (or the
	// lookup's error) until the session has decided which ones the
	// response carries: an idle follower's incremental fetch reads
	// thousands of partitions twice per replica.fetch.wait.max.ms and
	// carries none, so only the carried ones become response entries.
	im := s.Backend.Image()
	followerAllowed := replicaID < 0 || s.allowedCluster(r, authz.OpClusterAction)
	// Sized for every partition at once: growing these by appends left
	// twice their size behind for the collector.
	params.Partitions = make([]FetchPartition, 0, len(sctx.Read))
	var failed []FetchResult // by sctx.Read index; only once a lookup fails
	// A follower's partitions come topic by topic: each topic is looked
	// up once per run of its partitions, not once per partition (an idle
	// follower's session names thousands twice per
	// replica.fetch.wait.max.ms). A consumer's are authorized one by
	// one, each denial counted.
	var (
		t      *metadata.Topic
		terr   error
		looked bool
		key    fetchsession.Key
	)
	for i, rp := range sctx.Read {
		if replicaID < 0 || !looked || rp.Name != key.Name || rp.ID != key.ID {
			looked, key = true, rp.Key
			switch {
			case replicaID < 0:
				t, terr = s.lookupAuthorized(r, authz.OpRead, im, byID, rp.Name, rp.ID)
			case followerAllowed:
				t, terr = lookupTopic(im, byID, rp.Name, rp.ID)
			default:
				// Only brokers may fetch as replicas (CLUSTER_ACTION);
				// Kafka answers every partition TOPIC_AUTHORIZATION_FAILED.
				t, terr = nil, kerr.TopicAuthorizationFailed
			}
		}
		if terr != nil {
			if failed == nil {
				failed = make([]FetchResult, len(sctx.Read))
			}
			failed[i] = FetchResult{Err: terr, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			continue
		}
		maxBytes := rp.MaxBytes
		if maxBytes <= 0 {
			maxBytes = params.MaxBytes
		}
		params.Partitions = append(params.Partitions, FetchPartition{
			Topic: t.ID, Partition: rp.Partition, Offset: rp.FetchOffset,
			MaxBytes: maxBytes, CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
			LastFetchedEpoch: rp.LastFetchedEpoch,
		})
	}
	// finish answers with all, one result per sctx.Read partition.
	finish := func(all []FetchResult) {
		results := make([]fetchsession.Result, len(all))
		for i, res := range all {
			d := res.Diverging
			results[i] = fetchsession.Result{
				HighWatermark: res.HighWatermark, LastStableOffset: res.LastStableOffset,
				LogStartOffset: res.LogStartOffset, HasRecords: len(res.Records) > 0,
				Failed: ErrorCode(res.Err) != 0, Diverging: d != nil && d.EndOffset >= 0 && d.Epoch >= 0,
			}
		}
		out := sessions.Complete(sctx, results)
		if out.ErrorCode != 0 {
			resp.ErrorCode = out.ErrorCode
			respond(resp)
			return
		}
		resp.SessionID = out.SessionID
		resp.Topics = groupFetchAnswers(sctx.Read, all, out.Include)
		addFetchLeaderHints(s, r, req, resp)
		respond(resp)
	}
	if len(params.Partitions) == 0 {
		finish(failed)
		return
	}
	s.Backend.Fetch(params, func(results []FetchResult) {
		if failed == nil {
			finish(results)
			return
		}
		// Merge the backend's results into the failed lookups' places.
		j := 0
		for i := range failed {
			if failed[i].Err == nil {
				failed[i] = results[j]
				j++
			}
		}
		finish(failed)
	})
}

// fetchAnswer is the response entry of one partition's result.
func fetchAnswer(partition int32, res FetchResult) kmsg.FetchResponseTopicPartition {
	sp := kmsg.NewFetchResponseTopicPartition()
	sp.Partition = partition
	sp.PreferredReadReplica = -1
	sp.ErrorCode = ErrorCode(res.Err)
	sp.HighWatermark = res.HighWatermark
	sp.LastStableOffset = res.LastStableOffset
	sp.LogStartOffset = res.LogStartOffset
	if res.AbortedTxns != nil {
		sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(res.AbortedTxns))
		for j, a := range res.AbortedTxns {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			sp.AbortedTransactions[j] = at
		}
	}
	sp.RecordBatches = res.Records
	if res.Diverging != nil {
		sp.DivergingEpoch.Epoch = res.Diverging.Epoch
		sp.DivergingEpoch.EndOffset = res.Diverging.EndOffset
	}
	if sp.RecordBatches == nil {
		// Never null: librdkafka rejects a -1 record set size.
		sp.RecordBatches = []byte{}
	}
	return sp
}

// sessionRequest is a Fetch request's part the session cache decides on.
// Before v7 there are no sessions: every fetch is a sessionless full one.
func sessionRequest(req *kmsg.FetchRequest, byID, privileged bool) fetchsession.Request {
	sr := fetchsession.Request{
		SessionID: req.SessionID, Epoch: req.SessionEpoch,
		Privileged: privileged, UsesTopicIDs: byID,
	}
	if req.Version < 7 {
		sr.SessionID, sr.Epoch = 0, fetchsession.FinalEpoch
	}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			p := fetchsession.Partition{
				Key:                sessionKey(byID, rt.Topic, rt.TopicID, rp.Partition),
				FetchOffset:        rp.FetchOffset,
				LogStartOffset:     rp.LogStartOffset,
				MaxBytes:           rp.PartitionMaxBytes,
				CurrentLeaderEpoch: currentLeaderEpoch(req.Version, rp.CurrentLeaderEpoch),
				LastFetchedEpoch:   lastFetchedEpoch(req.Version, rp.LastFetchedEpoch),
			}
			sr.Partitions = append(sr.Partitions, p)
		}
	}
	if req.Version >= 7 {
		for _, ft := range req.ForgottenTopics {
			for _, p := range ft.Partitions {
				sr.Forgotten = append(sr.Forgotten, sessionKey(byID, ft.Topic, ft.TopicID, p))
			}
		}
	}
	return sr
}

func sessionKey(byID bool, name string, id [16]byte, partition int32) fetchsession.Key {
	if byID {
		return fetchsession.Key{ID: id, Partition: partition}
	}
	return fetchsession.Key{Name: name, Partition: partition}
}

// groupFetchAnswers builds the answer's topics from the partitions it
// carries, in read order; consecutive partitions of one topic share an
// entry, as Kafka groups them.
func groupFetchAnswers(read []fetchsession.Partition, all []FetchResult, include []bool) []kmsg.FetchResponseTopic {
	topics := []kmsg.FetchResponseTopic{}
	for i, res := range all {
		if !include[i] {
			continue
		}
		sp := fetchAnswer(read[i].Partition, res)
		k := read[i].Key
		if n := len(topics); n == 0 || topics[n-1].Topic != k.Name || topics[n-1].TopicID != k.ID {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = k.Name, k.ID
			topics = append(topics, st)
		}
		st := &topics[len(topics)-1]
		st.Partitions = append(st.Partitions, sp)
	}
	return topics
}

func currentLeaderEpoch(version int16, epoch int32) int32 {
	if version < 9 {
		return -1
	}
	return epoch
}

func lastFetchedEpoch(version int16, epoch int32) int32 {
	if version < 12 {
		return -1
	}
	return epoch
}

func clampDuration(d, lo, hi time.Duration) time.Duration {
	if d < lo {
		return lo
	}
	if d > hi {
		return hi
	}
	return d
}
