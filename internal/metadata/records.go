package metadata

// Record is one change to the cluster metadata. Records are applied in log
// order by Image.Apply; the set of record types is closed (isRecord is
// unexported) so that Apply and the codec can handle every one of them.
type Record interface {
	isRecord()
}

// RegisterBroker adds a broker or replaces an earlier registration of the same
// ID. The new Epoch must be greater than the registered one, so a delayed
// registration from an older incarnation cannot overwrite a newer one.
type RegisterBroker struct {
	Broker Broker
}

// FenceBroker marks a broker fenced. Epoch must match the registered epoch.
type FenceBroker struct {
	ID    int32
	Epoch int64
}

// UnfenceBroker marks a broker unfenced and clears InControlledShutdown.
// Epoch must match the registered epoch.
type UnfenceBroker struct {
	ID    int32
	Epoch int64
}

// BeginControlledShutdown marks a live broker as shutting down, so it gets no
// new leaderships. Epoch must match the registered epoch.
type BeginControlledShutdown struct {
	ID    int32
	Epoch int64
}

// UnregisterBroker removes a broker. Partitions that list it as a replica keep
// the ID; the controller moves replicas separately.
type UnregisterBroker struct {
	ID int32
}

// CreateTopic adds a topic. Name and ID must both be unused, and Partitions
// must be numbered 0..n-1 in order.
type CreateTopic struct {
	Name       string
	ID         TopicID
	Configs    map[string]string
	Partitions []Partition
}

// RemoveTopic deletes a topic by ID.
type RemoveTopic struct {
	ID TopicID
}

// AddPartitions appends partitions to a topic; their indexes must continue
// from the topic's current partition count.
type AddPartitions struct {
	TopicID    TopicID
	Partitions []Partition
}

// PartitionChange changes one partition. Nil fields are left unchanged.
// Replicas, AddingReplicas and RemovingReplicas together start, complete
// or revert a reassignment (Kafka's PartitionChangeRecord fields); an empty
// AddingReplicas and RemovingReplicas end it.
//
// Applying it always bumps PartitionEpoch by one, and bumps LeaderEpoch by one
// when Leader is set to a different broker (including to or from NoLeader).
// The epochs are derived here rather than carried in the record so that every
// broker computes the same values from the same log.
type PartitionChange struct {
	TopicID   TopicID
	Partition int32
	Leader    *int32   `json:",omitempty"`
	ISR       *[]int32 `json:",omitempty"`
	ELR       *[]int32 `json:",omitempty"`
	Replicas  *[]int32 `json:",omitempty"`

	AddingReplicas   *[]int32 `json:",omitempty"`
	RemovingReplicas *[]int32 `json:",omitempty"`
}

// SetTopicConfig sets (Value != nil) or deletes (Value == nil) one topic
// config override.
type SetTopicConfig struct {
	TopicID TopicID
	Key     string
	Value   *string
}

// AllocateProducerIDs raises the producer-id high-water mark. The controller
// hands out blocks [old NextID, NextID) and records the new mark first, so no
// ID is handed out twice even across controller failover.
type AllocateProducerIDs struct {
	NextID int64
}

func (RegisterBroker) isRecord()          {}
func (FenceBroker) isRecord()             {}
func (UnfenceBroker) isRecord()           {}
func (BeginControlledShutdown) isRecord() {}
func (UnregisterBroker) isRecord()        {}
func (CreateTopic) isRecord()             {}
func (RemoveTopic) isRecord()             {}
func (AddPartitions) isRecord()           {}
func (PartitionChange) isRecord()         {}
func (SetTopicConfig) isRecord()          {}
func (AllocateProducerIDs) isRecord()     {}
