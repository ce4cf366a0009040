package group

// RequestID names one parked-capable request (JoinGroup, SyncGroup) so its
// answer can be routed back when it arrives in a later Output. The runtime
// chooses the ids; they must be unique among requests not yet answered.
type RequestID uint64

// State is a group's state in the classic protocol.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

// String is the name Kafka uses in DescribeGroups and ListGroups.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	default:
		return "Dead"
	}
}

// Protocol is one assignment protocol a member supports, with the member's
// metadata for it (for consumers: the encoded subscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is a JoinGroup request. Byte slices are kept, not copied.
type JoinRequest struct {
	ID                 RequestID
	GroupID            string
	MemberID           string // "" for a member joining for the first time
	InstanceID         string // group.instance.id; "" for a dynamic member
	ClientID           string
	ClientHost         string
	SessionTimeoutMs   int32
	RebalanceTimeoutMs int32 // <= 0 (JoinGroup v0): the session timeout
	ProtocolType       string
	Protocols          []Protocol
	// RequireKnownMemberID is set for JoinGroup v4+: a dynamic member
	// without an id gets MEMBER_ID_REQUIRED with one first (KIP-394).
	RequireKnownMemberID bool
	// SupportsSkipAssignment is set for JoinGroup v9+ (KIP-814).
	SupportsSkipAssignment bool
}

// JoinMember is one member in the leader's JoinGroup answer.
type JoinMember struct {
	MemberID   string
	InstanceID string
	Metadata   []byte
}

// JoinResponse is a JoinGroup answer. Err is nil or a *kerr.Error.
type JoinResponse struct {
	Err            error
	MemberID       string
	Generation     int32
	ProtocolType   string
	ProtocolName   string
	LeaderID       string
	SkipAssignment bool
	Members        []JoinMember // only for the leader
}

// SyncRequest is a SyncGroup request. ProtocolType and ProtocolName are ""
// when the client did not send them (before v5).
type SyncRequest struct {
	ID           RequestID
	GroupID      string
	MemberID     string
	InstanceID   string
	Generation   int32
	ProtocolType string
	ProtocolName string
	Assignments  []Assignment // only from the leader
}

// Assignment is the leader's assignment for one member.
type Assignment struct {
	MemberID   string
	Assignment []byte
}

// SyncResponse is a SyncGroup answer. Err is nil or a *kerr.Error.
type SyncResponse struct {
	Err          error
	ProtocolType string
	ProtocolName string
	Assignment   []byte
}

// HeartbeatRequest is a Heartbeat request; the answer is returned directly.
type HeartbeatRequest struct {
	GroupID    string
	MemberID   string
	InstanceID string
	Generation int32
}

// LeaveRequest is a LeaveGroup request (v0-v2 carry one member).
type LeaveRequest struct {
	GroupID string
	Members []LeavingMember
}

// LeavingMember is one member leaving; an InstanceID with an empty MemberID
// removes that static member whatever its id is (the admin path of KIP-345).
type LeavingMember struct {
	MemberID   string
	InstanceID string
}

// LeaveResponse answers a LeaveRequest: Err for the whole request, Members
// in the order of the request.
type LeaveResponse struct {
	Err     error
	Members []error
}

// JoinResult routes a JoinGroup answer to its request.
type JoinResult struct {
	To       RequestID
	Response JoinResponse
}

// SyncResult routes a SyncGroup answer to its request.
type SyncResult struct {
	To       RequestID
	Response SyncResponse
}

// WriteID names one AssignmentWrite; unique within a Coordinator.
type WriteID uint64

// AssignmentWrite is the group metadata record of a generation's assignment
// (the leader's SyncGroup). Unlike Output.Records, the coordinator acts on
// it only once it learns the outcome, as Kafka does: the group stays
// CompletingRebalance, and every SyncGroup of the generation stays parked,
// until the runtime reports with AssignmentWritten that the record was
// committed (the group becomes Stable, the syncs get their assignments) or
// that the write failed (they get an error, the group rebalances).
type AssignmentWrite struct {
	ID      WriteID
	GroupID string
	Record  Record
}

// Output is what a call asks of the runtime: append Records (and wait for
// them to commit) first, then send the answers; append AssignmentWrites
// after Records and report each one's outcome (the answers do not wait for
// them). See the package comment.
type Output struct {
	Records []Record
	// Txn, when set, makes Records one transactional batch of its
	// producer (TxnCommitOffsets's; no other record is in such an Output).
	Txn              *TxnBatch
	AssignmentWrites []AssignmentWrite
	Joins            []JoinResult
	Syncs            []SyncResult
}

func (o *Output) join(to RequestID, r JoinResponse) {
	o.Joins = append(o.Joins, JoinResult{To: to, Response: r})
}

func (o *Output) sync(to RequestID, r SyncResponse) {
	o.Syncs = append(o.Syncs, SyncResult{To: to, Response: r})
}

func (o *Output) joinError(to RequestID, memberID string, err error) {
	o.join(to, JoinResponse{Err: err, MemberID: memberID, Generation: -1})
}

// IsZero reports whether there is nothing to do.
func (o Output) IsZero() bool {
	return len(o.Records) == 0 && len(o.AssignmentWrites) == 0 && len(o.Joins) == 0 && len(o.Syncs) == 0
}
