package metadata

import (
	"maps"
	"slices"
)

// NoLeader is the Leader value of a partition that has no leader.
const NoLeader int32 = -1

// Limits on what a record may describe. They keep a corrupt or hostile record
// from making every broker allocate without bound while applying it.
const (
	// MaxTopicNameLen matches Kafka's limit on topic names.
	MaxTopicNameLen = 249
	// MaxPartitionsPerTopic bounds one topic; far above any sane deployment.
	MaxPartitionsPerTopic = 100_000
	// MaxReplicas bounds one partition's replica list (replication factor).
	MaxReplicas = 128
	// MaxEndpoints bounds the listeners one broker may advertise.
	MaxEndpoints = 64
	// MaxLogDirs bounds the log directories one broker may register.
	MaxLogDirs = 256
	// MaxConfigKeyLen and MaxConfigValueLen bound one topic config entry.
	MaxConfigKeyLen   = 255
	MaxConfigValueLen = 64 << 10
	// MaxConfigsPerTopic bounds the number of overrides on one topic.
	MaxConfigsPerTopic = 1024
)

// Endpoint is one listener a broker advertises to clients or other brokers.
type Endpoint struct {
	Listener string
	Host     string
	Port     int32
}

// Broker is one registered broker.
type Broker struct {
	ID        int32
	Rack      string
	Endpoints []Endpoint
	// Fenced brokers may not lead or join an ISR: the controller has not heard
	// from them recently, or they have not caught up with metadata yet.
	Fenced bool
	// Epoch changes on every registration, so messages from a previous
	// incarnation of the same broker ID can be recognised and rejected.
	Epoch int64
	// InControlledShutdown brokers are still alive but are moving leadership
	// away; they are not eligible for new leaderships or ISR additions.
	InControlledShutdown bool
	// LogDirs are the directory ids (KIP-858) of the broker's log
	// directories, each created when its directory was first formatted. A
	// different set on re-registration means a directory was replaced (a
	// new, empty disk), so the broker may no longer hold what it once did.
	// Empty for a registration that did not say (older brokers).
	LogDirs []DirectoryID `json:",omitempty"`
	// VouchedEpoch is the PreviousBrokerEpoch (KIP-966) the process that
	// registered with Epoch sent: the epoch up to which its logs held
	// everything when it started. A process that dies before learning
	// Epoch leaves its successor vouching for this one again (0: not
	// known, a registration older than the field).
	VouchedEpoch int64 `json:",omitempty"`
	// ReplicaCapacity is how many replicas the broker said it can keep
	// open, from its open-files limit (RLIMIT_NOFILE) less the descriptors
	// it keeps free, over log.open.files.per.replica; the controller
	// places no more on it (controller.checkReplicaCapacity). 0: not
	// limited (the broker did not say, or log.open.files.per.replica is 0).
	ReplicaCapacity int32 `json:",omitempty"`
	// OpenFilesLimit is the open-files limit ReplicaCapacity was derived
	// from, for the controller's refusals to name (0: not said).
	OpenFilesLimit int32 `json:",omitempty"`
}

// DirectoryID is a log directory's 128-bit UUID, in the same form as a
// TopicID (Kafka's Uuid).
type DirectoryID = TopicID

// Clone returns a deep copy that the caller may modify.
func (b *Broker) Clone() *Broker {
	c := *b
	c.Endpoints = slices.Clone(b.Endpoints)
	c.LogDirs = slices.Clone(b.LogDirs)
	return &c
}

// Partition is one partition's replica set and leadership state.
type Partition struct {
	Index int32
	// Replicas in preference order; the first is the preferred leader.
	Replicas []int32
	// ISR is the in-sync replica set: the members that hold every record
	// acknowledged with acks=all.
	ISR []int32
	// ELR (KIP-966 eligible leader replicas) are replicas outside the ISR that
	// are still known to hold every committed record, so electing one is clean.
	ELR []int32
	// Leader is a member of ISR, or NoLeader.
	Leader int32
	// LeaderEpoch bumps on every leader change; records carry it so followers
	// can truncate divergent history.
	LeaderEpoch int32
	// PartitionEpoch bumps on every change; AlterPartition requests carry it
	// so stale ISR proposals are rejected.
	PartitionEpoch int32
	// AddingReplicas and RemovingReplicas describe a reassignment in
	// progress (KIP-455), as Kafka's PartitionRecord does: Replicas is then
	// the union of the target and the original replicas, the target first.
	// Both are empty when no reassignment is in progress.
	AddingReplicas   []int32 `json:",omitempty"`
	RemovingReplicas []int32 `json:",omitempty"`
}

// Reassigning reports whether a reassignment of p is in progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas is where p is being moved: Replicas without the ones
// being removed (Replicas itself when no reassignment is in progress).
func (p Partition) TargetReplicas() []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.RemovingReplicas, r) })
}

// OriginalReplicas is where p was before its reassignment began: Replicas
// without the ones being added. Cancelling returns there.
func (p Partition) OriginalReplicas() []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.AddingReplicas, r) })
}

// Clone returns a deep copy that the caller may modify.
func (p Partition) Clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.ELR = slices.Clone(p.ELR)
	p.AddingReplicas = slices.Clone(p.AddingReplicas)
	p.RemovingReplicas = slices.Clone(p.RemovingReplicas)
	return p
}

// Topic is one topic with its partitions (indexed by position: Partitions[i].Index == i).
type Topic struct {
	Name       string
	ID         TopicID
	Partitions []Partition
	// Configs holds only this topic's overrides; defaults live with the broker.
	Configs map[string]string
}

// Clone returns a deep copy that the caller may modify.
func (t *Topic) Clone() *Topic {
	c := *t
	c.Partitions = make([]Partition, len(t.Partitions))
	for i, p := range t.Partitions {
		c.Partitions[i] = p.Clone()
	}
	c.Configs = maps.Clone(t.Configs)
	return &c
}

// Partition returns the partition with the given index.
func (t *Topic) Partition(index int32) (Partition, bool) {
	if index < 0 || int(index) >= len(t.Partitions) {
		return Partition{}, false
	}
	return t.Partitions[index], true
}
