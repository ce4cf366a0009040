package api

// The controller quorum's admin APIs (KIP-595, KIP-853), decided by the
// quorum leader, which is the active controller: a broker or another
// controller forwards them there.
//
// DescribeQuorum (55): versions 0-2. The leader's view of
// __cluster_metadata-0: leader id and epoch, high watermark, each voter's
// and observer's log end offset, and (v1+) when the leader last heard
// from it and last saw it caught up; v2 adds directory ids and the voters'
// endpoints (Nodes).
//
// AddRaftVoter (80, v0-1) and RemoveRaftVoter (81, v0): change a dynamic
// quorum's voters one at a time. A static quorum (controller.quorum.voters,
// Kafka's kraft.version 0, until upgraded: see 57_update_features.go)
// answers UNSUPPORTED_VERSION, a change while
// another is in progress REQUEST_TIMED_OUT (retry), adding a voter twice
// DUPLICATE_VOTER, removing an unknown (id, directory id) VOTER_NOT_FOUND.
// A wrong cluster id is INCONSISTENT_CLUSTER_ID.
//
// UpdateRaftVoter (82, v0): a voter that came back with other endpoints
// asks the leader to record them (at kraft.version 0 every static voter
// sends its record once per leader term, which the leader keeps in memory
// for the kraft.version upgrade) (controller to controller, CLUSTER_ACTION
// on the controller listener; never forwarded: a follower answers
// NOT_LEADER_OR_FOLLOWER naming the leader it knows). The voter's
// CurrentLeaderEpoch older or newer than the leader's term is
// FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH; an (id, directory id) that
// is not a voter VOTER_NOT_FOUND; endpoints without the quorum's listener
// name, or a kraft.version range without the quorum's version,
// INVALID_REQUEST; a change in progress REQUEST_TIMED_OUT.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/quorum"
)

func init() {
	register(Spec{Key: 55, MinVersion: 0, MaxVersion: 2, Handle: handleDescribeQuorum, Blocking: true, Forwardable: true})
	register(Spec{Key: 80, MinVersion: 0, MaxVersion: 1, Handle: handleAddRaftVoter, Blocking: true, Forwardable: true})
	register(Spec{Key: 81, MinVersion: 0, MaxVersion: 0, Handle: handleRemoveRaftVoter, Blocking: true, Forwardable: true})
	register(Spec{Key: 82, MinVersion: 0, MaxVersion: 0, Handle: handleUpdateRaftVoter, ControllerOnly: true})
	codeMappers = append(codeMappers, quorumErrorCode)
}

// QuorumBackend is the quorum leader's side of these APIs. Calls resolve
// done exactly once, possibly on another goroutine.
type QuorumBackend interface {
	DescribeQuorum(done func(QuorumDescription, error))
	AddRaftVoter(m quorum.Member, timeout time.Duration, done func(error))
	RemoveRaftVoter(nodeID int32, dir [16]byte, done func(error))
	UpdateRaftVoter(m quorum.Member, leaderEpoch int32, kraft quorum.VersionRange, done func(error))
	// UpgradeKRaft upgrades a static quorum to kraft.version 1
	// (UpdateFeatures), or with validateOnly checks that it could.
	UpgradeKRaft(validateOnly bool, timeout time.Duration, done func(error))
	// KRaftVersion is the quorum's kraft.version as this node knows it.
	KRaftVersion() int16
}

// QuorumDescription is the leader's Description plus the broker-only
// nodes that fetch the metadata log from it (observers).
type QuorumDescription struct {
	quorum.Description
	Observers []quorum.Replica
}

// Bounds of AddRaftVoter's timeout: Kafka's admin client sends 30 s.
const (
	defaultQuorumChangeTimeout = 30 * time.Second
	maxQuorumChangeTimeout     = 5 * time.Minute
)

func quorumErrorCode(err error) (int16, bool) {
	switch {
	case errors.Is(err, quorum.ErrStaticQuorum):
		return kerr.UnsupportedVersion.Code, true
	case errors.Is(err, quorum.ErrChangePending), errors.Is(err, quorum.ErrChangeAborted):
		return kerr.RequestTimedOut.Code, true
	case errors.Is(err, quorum.ErrDuplicateVoter):
		return kerr.DuplicateVoter.Code, true
	case errors.Is(err, quorum.ErrVoterNotFound):
		return kerr.VoterNotFound.Code, true
	case errors.Is(err, quorum.ErrInvalidChange):
		return kerr.InvalidRequest.Code, true
	case errors.Is(err, quorum.ErrNotLeader):
		return kerr.NotLeaderForPartition.Code, true
	case errors.Is(err, quorum.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code, true
	case errors.Is(err, quorum.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code, true
	}
	return 0, false
}

func handleDescribeQuorum(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if !s.allowedCluster(r, authz.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		respond(resp)
		return
	}
	// One partition exists, __cluster_metadata-0; anything else asked
	// for is UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers.
	wanted := false
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition = p.Partition
			if t.Topic != MetadataLogTopic || p.Partition != 0 {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				wanted = true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !wanted {
		respond(resp)
		return
	}
	s.Backend.Quorum().DescribeQuorum(func(d QuorumDescription, err error) {
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				rp := &resp.Topics[ti].Partitions[pi]
				if rp.ErrorCode != 0 {
					continue
				}
				if err != nil {
					rp.ErrorCode = ErrorCode(err)
					if req.Version >= 2 {
						rp.ErrorMessage = ErrorMessage(err)
					}
					continue
				}
				fillQuorumPartition(rp, d)
			}
		}
		if err == nil && req.Version >= 2 {
			resp.Nodes = quorumNodes(d)
		}
		respond(resp)
	})
}

func fillQuorumPartition(rp *kmsg.DescribeQuorumResponseTopicPartition, d QuorumDescription) {
	rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = d.LeaderID, int32(d.LeaderEpoch), d.HighWatermark
	state := func(r quorum.Replica) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		st := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		st.ReplicaID, st.ReplicaDirectoryID, st.LogEndOffset = r.NodeID, r.DirectoryID, r.LogEndOffset
		st.LastFetchTimestamp, st.LastCaughtUpTimestamp = unixMillisOrUnknown(r.LastFetch), unixMillisOrUnknown(r.LastCaughtUp)
		return st
	}
	for _, v := range d.Voters {
		rp.CurrentVoters = append(rp.CurrentVoters, state(v))
	}
	for _, l := range d.Learners {
		rp.Observers = append(rp.Observers, state(l))
	}
	for _, o := range d.Observers {
		rp.Observers = append(rp.Observers, state(o))
	}
}

// quorumNodes are the voters' endpoints (v2's Nodes); a static quorum's
// records carry none, so its voters are listed without listeners.
func quorumNodes(d QuorumDescription) []kmsg.DescribeQuorumResponseNode {
	var out []kmsg.DescribeQuorumResponseNode
	for _, v := range d.Voters {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = v.NodeID
		for _, l := range v.Listeners {
			nl := kmsg.NewDescribeQuorumResponseNodeListener()
			nl.Name, nl.Host, nl.Port = l.Name, l.Host, l.Port
			n.Listeners = append(n.Listeners, nl)
		}
		out = append(out, n)
	}
	return out
}

func unixMillisOrUnknown(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

func handleAddRaftVoter(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	m := quorum.Member{NodeID: req.VoterID, DirectoryID: req.VoterDirectoryID}
	for _, l := range req.Listeners {
		m.Listeners = append(m.Listeners, quorum.Listener{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = defaultQuorumChangeTimeout
	}
	timeout = min(timeout, maxQuorumChangeTimeout)
	serveQuorumChange(s, r, req.ClusterID, func(err error) {
		resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		respond(resp)
	}, func(done func(error)) { s.Backend.Quorum().AddRaftVoter(m, timeout, done) })
}

func handleRemoveRaftVoter(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	serveQuorumChange(s, r, req.ClusterID, func(err error) {
		resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		respond(resp)
	}, func(done func(error)) { s.Backend.Quorum().RemoveRaftVoter(req.VoterID, req.VoterDirectoryID, done) })
}

func handleUpdateRaftVoter(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.UpdateRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	answer := func(err error) {
		resp.ErrorCode = ErrorCode(err)
		if nl, ok := errors.AsType[*quorum.NotLeaderError](err); ok {
			resp.CurrentLeader.LeaderID = nl.LeaderNode()
		}
		respond(resp)
	}
	if req.ClusterID != nil && *req.ClusterID != s.Backend.Image().ClusterID() {
		answer(kerr.InconsistentClusterID)
		return
	}
	if len(req.Listeners) > maxUpdateVoterListeners {
		answer(kerr.InvalidRequest)
		return
	}
	m := quorum.Member{NodeID: req.VoterID, DirectoryID: req.VoterDirectoryID}
	for _, l := range req.Listeners {
		m.Listeners = append(m.Listeners, quorum.Listener{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	kraft := quorum.VersionRange{Min: req.KRaftVersionFeature.MinSupportedVersion, Max: req.KRaftVersionFeature.MaxSupportedVersion}
	s.Backend.Quorum().UpdateRaftVoter(m, req.CurrentLeaderEpoch, kraft, answer)
}

// maxUpdateVoterListeners bounds the endpoints one UpdateRaftVoter may
// carry before they are copied (the quorum refuses more than it records).
const maxUpdateVoterListeners = 64

// serveQuorumChange authorizes a voter change (ALTER on the cluster),
// checks the cluster id the request names, makes the change and answers
// with its outcome (nil: success).
func serveQuorumChange(s *Server, r *Request, clusterID *string, answer func(error), change func(done func(error))) {
	if !s.allowedCluster(r, authz.OpAlter) {
		answer(kerr.ClusterAuthorizationFailed)
		return
	}
	if clusterID != nil && *clusterID != s.Backend.Image().ClusterID() {
		answer(kerr.InconsistentClusterID)
		return
	}
	change(answer)
}
