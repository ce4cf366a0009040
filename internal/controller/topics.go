package controller

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// ConfigValidator checks a topic's complete set of config overrides. The
// caller supplies it (it knows the config schema and broker defaults); any
// error it returns is reported as INVALID_CONFIG with the error as cause.
type ConfigValidator func(map[string]string) error

// CreateTopicRequest is one topic of a CreateTopics request.
type CreateTopicRequest struct {
	Name string
	// NumPartitions and ReplicationFactor: -1 means the broker default. Both
	// must be -1 when Assignments is given.
	NumPartitions     int32
	ReplicationFactor int16
	// Assignments maps partition index (0..n-1) to its replicas, leader first.
	Assignments map[int32][]int32
	Configs     map[string]string
}

// Defaults are the broker's num.partitions and default.replication.factor.
type Defaults struct {
	NumPartitions     int32
	ReplicationFactor int16
}

// maxReplicaEntriesPerRecord bounds the replica IDs listed in one record, so
// that a topic with very many partitions is split into a CreateTopic followed
// by AddPartitions records, each well under metadata.MaxRecordBytes.
const maxReplicaEntriesPerRecord = 50_000

// CreateTopic decides a topic creation. Automatic placement uses only active
// brokers (registered, unfenced, not shutting down); every replica starts in
// the ISR and the first replica leads. A manual assignment may name any
// registered broker, as Kafka allows, but only active ones enter the ISR and
// the first of those leads; a partition with no active replica is rejected.
// All epochs start at 0. newID must be a fresh random UUID.
func CreateTopic(im *metadata.Image, req CreateTopicRequest, defaults Defaults, newID metadata.TopicID, validateConfigs ConfigValidator) ([]metadata.Record, error) {
	if err := ValidateTopicName(req.Name); err != nil {
		return nil, err
	}
	if _, ok := im.Topic(req.Name); ok {
		return nil, errorf(kerr.TopicAlreadyExists, "topic %q already exists", req.Name)
	}
	if other, ok := collidingTopic(im, req.Name); ok {
		return nil, errorf(kerr.InvalidTopicException, "topic %q collides with existing topic %q ('.' and '_' are interchangeable in metric names)", req.Name, other)
	}
	if newID.IsZero() {
		return nil, errorf(kerr.UnknownServerError, "topic %q: zero topic id", req.Name)
	}
	if _, ok := im.TopicByID(newID); ok {
		return nil, errorf(kerr.UnknownServerError, "topic %q: topic id %s already in use; retry with a new id", req.Name, newID)
	}
	if err := checkConfigs(req.Configs, validateConfigs); err != nil {
		return nil, err
	}

	var parts []metadata.Partition
	if len(req.Assignments) > 0 {
		if req.NumPartitions != -1 || req.ReplicationFactor != -1 {
			return nil, errorf(kerr.InvalidRequest, "topic %q: replica assignments and partition count or replication factor cannot both be set", req.Name)
		}
		assignments, err := orderedAssignments(req.Assignments)
		if err != nil {
			return nil, err
		}
		if parts, err = manualPartitions(im, assignments, 0, len(assignments[0])); err != nil {
			return nil, err
		}
	} else {
		numPartitions, rf := req.NumPartitions, req.ReplicationFactor
		if numPartitions == -1 {
			numPartitions = defaults.NumPartitions
		}
		if rf == -1 {
			rf = defaults.ReplicationFactor
		}
		placed, err := PlaceReplicas(activeBrokers(im), int(numPartitions), int(rf), placementStart(req.Name))
		if err != nil {
			return nil, err
		}
		parts = placedPartitions(placed, 0)
	}
	if err := checkReplicaCapacity(im, parts, kerr.InvalidPartitions); err != nil {
		return nil, err
	}

	chunks := chunkPartitions(parts)
	recs := make([]metadata.Record, 0, len(chunks))
	recs = append(recs, metadata.CreateTopic{Name: req.Name, ID: newID, Configs: maps.Clone(req.Configs), Partitions: chunks[0]})
	for _, c := range chunks[1:] {
		recs = append(recs, metadata.AddPartitions{TopicID: newID, Partitions: c})
	}
	return recs, nil
}

// DeleteTopic decides deleting a topic by name.
func DeleteTopic(im *metadata.Image, name string) ([]metadata.Record, error) {
	t, ok := im.Topic(name)
	if !ok {
		return nil, errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	return []metadata.Record{metadata.RemoveTopic{ID: t.ID}}, nil
}

// DeleteTopicByID decides deleting a topic by ID (DeleteTopics v6+).
func DeleteTopicByID(im *metadata.Image, id metadata.TopicID) ([]metadata.Record, error) {
	if _, ok := im.TopicByID(id); !ok {
		return nil, errorf(kerr.UnknownTopicID, "topic id %s does not exist", id)
	}
	return []metadata.Record{metadata.RemoveTopic{ID: id}}, nil
}

// CreatePartitions decides growing a topic to newTotal partitions. New
// partitions keep the topic's replication factor (that of partition 0).
// assignments, if not nil, lists the replicas of each new partition in
// order; otherwise placement continues the topic's round robin.
func CreatePartitions(im *metadata.Image, topic string, newTotal int32, assignments [][]int32) ([]metadata.Record, error) {
	t, ok := im.Topic(topic)
	if !ok {
		return nil, errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", topic)
	}
	current := int32(len(t.Partitions))
	switch {
	case newTotal == current:
		return nil, errorf(kerr.InvalidPartitions, "topic %q already has %d partitions", topic, current)
	case newTotal < current:
		return nil, errorf(kerr.InvalidPartitions, "topic %q has %d partitions; the count cannot shrink to %d", topic, current, newTotal)
	case newTotal > metadata.MaxPartitionsPerTopic:
		return nil, errorf(kerr.InvalidPartitions, "topic %q: %d partitions exceed the limit of %d", topic, newTotal, metadata.MaxPartitionsPerTopic)
	}
	added := int(newTotal - current)
	rf := len(t.Partitions[0].Replicas)

	var parts []metadata.Partition
	if assignments != nil {
		if len(assignments) != added {
			return nil, errorf(kerr.InvalidReplicaAssignment, "topic %q: %d assignments given for %d new partitions", topic, len(assignments), added)
		}
		var err error
		if parts, err = manualPartitions(im, assignments, int(current), rf); err != nil {
			return nil, err
		}
	} else {
		// Offsetting start by the current count continues the sequence the
		// topic's creation began, as if it had been created this large.
		placed, err := PlaceReplicas(activeBrokers(im), added, rf, placementStart(topic)+int(current))
		if err != nil {
			return nil, err
		}
		parts = placedPartitions(placed, int(current))
	}
	if err := checkReplicaCapacity(im, parts, kerr.InvalidPartitions); err != nil {
		return nil, err
	}
	var recs []metadata.Record
	for _, c := range chunkPartitions(parts) {
		recs = append(recs, metadata.AddPartitions{TopicID: t.ID, Partitions: c})
	}
	return recs, nil
}

// AlterTopicConfigs decides changing a topic's config overrides: set[key] =
// &value sets, nil deletes. (Incremental APPEND/SUBTRACT and the
// replace-everything AlterConfigs are resolved into this form by the caller.)
// validate sees the complete resulting overrides. Entries that change
// nothing produce no record, so the result may be empty.
func AlterTopicConfigs(im *metadata.Image, topic string, set map[string]*string, validate ConfigValidator) ([]metadata.Record, error) {
	t, ok := im.Topic(topic)
	if !ok {
		return nil, errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", topic)
	}
	result := mergeConfigs(t.Configs, set)
	if err := checkConfigs(result, validate); err != nil {
		return nil, err
	}
	var recs []metadata.Record
	for _, c := range configChanges(t.Configs, set) {
		recs = append(recs, metadata.SetTopicConfig{TopicID: t.ID, Key: c.key, Value: c.value})
	}
	return recs, nil
}

// mergeConfigs is current with set applied (a nil value deletes), in a
// new map.
func mergeConfigs(current map[string]string, set map[string]*string) map[string]string {
	result := maps.Clone(current)
	if result == nil {
		result = map[string]string{}
	}
	for k, v := range set {
		if v == nil {
			delete(result, k)
		} else {
			result[k] = *v
		}
	}
	return result
}

type configChange struct {
	key   string
	value *string // nil: delete
}

// configChanges lists, sorted by key, the entries of set that change
// current, with values copied.
func configChanges(current map[string]string, set map[string]*string) []configChange {
	var out []configChange
	for _, k := range slices.Sorted(maps.Keys(set)) {
		old, had := current[k]
		v := set[k]
		if (v == nil && !had) || (v != nil && had && old == *v) {
			continue
		}
		var value *string
		if v != nil {
			value = new(string)
			*value = *v
		}
		out = append(out, configChange{key: k, value: value})
	}
	return out
}

// checkConfigs enforces the metadata limits (so the records will apply) and
// then the caller's validator.
func checkConfigs(configs map[string]string, validate ConfigValidator) error {
	if len(configs) > metadata.MaxConfigsPerTopic {
		return errorf(kerr.InvalidConfig, "%d config overrides exceed the limit of %d", len(configs), metadata.MaxConfigsPerTopic)
	}
	for k, v := range configs {
		if k == "" || len(k) > metadata.MaxConfigKeyLen {
			return errorf(kerr.InvalidConfig, "config name length %d outside 1..%d", len(k), metadata.MaxConfigKeyLen)
		}
		if len(v) > metadata.MaxConfigValueLen {
			return errorf(kerr.InvalidConfig, "config %q: value of %d bytes exceeds %d", k, len(v), metadata.MaxConfigValueLen)
		}
	}
	if validate == nil {
		return nil
	}
	if err := validate(configs); err != nil {
		return &Error{Code: kerr.InvalidConfig, Detail: "invalid topic config", Cause: err}
	}
	return nil
}

// orderedAssignments turns a partition->replicas map into a slice, requiring
// the keys to be exactly 0..n-1.
func orderedAssignments(m map[int32][]int32) ([][]int32, error) {
	if len(m) > metadata.MaxPartitionsPerTopic {
		return nil, errorf(kerr.InvalidPartitions, "%d partitions exceed the limit of %d", len(m), metadata.MaxPartitionsPerTopic)
	}
	out := make([][]int32, len(m))
	for p, replicas := range m {
		if p < 0 || int(p) >= len(m) {
			return nil, errorf(kerr.InvalidReplicaAssignment, "partitions must be numbered 0..%d without gaps; got %d", len(m)-1, p)
		}
		out[p] = replicas
	}
	return out, nil
}

// manualPartitions validates caller-chosen replica lists (every one rf long,
// distinct registered brokers) and builds partitions numbered from first.
func manualPartitions(im *metadata.Image, assignments [][]int32, first, rf int) ([]metadata.Partition, error) {
	if rf <= 0 || rf > metadata.MaxReplicas {
		return nil, errorf(kerr.InvalidReplicaAssignment, "replica lists must have 1..%d brokers, got %d", metadata.MaxReplicas, rf)
	}
	parts := make([]metadata.Partition, len(assignments))
	for i, replicas := range assignments {
		index := int32(first + i)
		if len(replicas) != rf {
			return nil, errorf(kerr.InvalidReplicaAssignment, "partition %d has %d replicas; all partitions must have %d", index, len(replicas), rf)
		}
		isr := make([]int32, 0, len(replicas))
		for j, b := range replicas {
			if slices.Contains(replicas[:j], b) {
				return nil, errorf(kerr.InvalidReplicaAssignment, "partition %d lists broker %d twice", index, b)
			}
			if _, ok := im.Broker(b); !ok {
				return nil, errorf(kerr.InvalidReplicaAssignment, "partition %d: broker %d is not registered", index, b)
			}
			if im.IsActive(b) {
				isr = append(isr, b)
			}
		}
		if len(isr) == 0 {
			return nil, errorf(kerr.InvalidReplicaAssignment, "partition %d: all assigned brokers are fenced or shutting down", index)
		}
		parts[i] = metadata.Partition{Index: index, Replicas: slices.Clone(replicas), ISR: isr, Leader: isr[0]}
	}
	return parts, nil
}

// placedPartitions builds partitions from PlaceReplicas output: all replicas
// in sync (they are active brokers and the partition is empty), first leads.
func placedPartitions(placed [][]int32, first int) []metadata.Partition {
	parts := make([]metadata.Partition, len(placed))
	for i, replicas := range placed {
		parts[i] = metadata.Partition{
			Index:    int32(first + i),
			Replicas: replicas,
			ISR:      slices.Clone(replicas),
			Leader:   replicas[0],
		}
	}
	return parts
}

// activeBrokers lists the brokers eligible for new replicas.
func activeBrokers(im *metadata.Image) []BrokerInfo {
	var out []BrokerInfo
	for _, b := range im.Brokers() {
		if im.IsActive(b.ID) {
			out = append(out, BrokerInfo{ID: b.ID, Rack: b.Rack})
		}
	}
	return out
}

// chunkPartitions splits partitions so each record lists at most
// maxReplicaEntriesPerRecord replica IDs. It always returns at least one chunk
// when given at least one partition.
func chunkPartitions(parts []metadata.Partition) [][]metadata.Partition {
	var chunks [][]metadata.Partition
	start, entries := 0, 0
	for i, p := range parts {
		n := len(p.Replicas)
		if i > start && entries+n > maxReplicaEntriesPerRecord {
			chunks = append(chunks, parts[start:i])
			start, entries = i, 0
		}
		entries += n
	}
	if start < len(parts) {
		chunks = append(chunks, parts[start:])
	}
	return chunks
}
