package metadata

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/skein-log/skein/internal/authz"
)

// ErrInvalidRecord is wrapped by every error Apply returns, so callers can tell
// a rejected record from other failures.
var ErrInvalidRecord = errors.New("invalid metadata record")

// Apply applies records in order and returns the resulting image. It is
// all-or-nothing: if any record is invalid (unknown topic or broker, duplicate
// name, leader outside the ISR, stale epoch, ...) it returns an error wrapping
// ErrInvalidRecord and no image. The receiver is never modified, so readers
// of the old image are unaffected either way.
func (im *Image) Apply(recs ...Record) (*Image, error) {
	if len(recs) == 0 {
		return im, nil
	}
	b := newBuilder(im)
	for i, r := range recs {
		if err := b.apply(r); err != nil {
			return nil, fmt.Errorf("%w: record %d (%T): %w", ErrInvalidRecord, i, r, err)
		}
	}
	next := b.finish()
	next.version = im.version + int64(len(recs))
	return next, nil
}

// builder accumulates one Apply. It copies the base image's maps the first
// time it writes to them, and clones a topic or broker the first time it
// changes one; after that the clone is private to the builder and is mutated
// in place, so a batch touching many partitions of one topic clones it once.
type builder struct {
	img Image

	topicMapsCopied bool
	brokerMapCopied bool
	ownedTopics     map[*Topic]bool
	ownedBrokers    map[*Broker]bool
	// acls is the builder's copy of the ACLs once a record changes them.
	acls map[string]authz.ACL
	// scramCopied is set once the builder owns its credentials map.
	scramCopied bool
}

func newBuilder(base *Image) *builder {
	return &builder{
		img:          *base,
		ownedTopics:  map[*Topic]bool{},
		ownedBrokers: map[*Broker]bool{},
	}
}

func (b *builder) finish() *Image {
	img := b.img
	if b.topicMapsCopied {
		img.sortedTopics = slices.SortedFunc(maps.Values(img.topicsByName), func(x, y *Topic) int {
			return cmp.Compare(x.Name, y.Name)
		})
	}
	if b.brokerMapCopied {
		img.sortedBrokers = slices.SortedFunc(maps.Values(img.brokers), func(x, y *Broker) int {
			return cmp.Compare(x.ID, y.ID)
		})
	}
	b.finishACLs(&img)
	return &img
}

func (b *builder) apply(r Record) error {
	switch r := r.(type) {
	case RegisterBroker:
		return b.registerBroker(r)
	case FenceBroker:
		return b.changeBroker(r.ID, r.Epoch, func(br *Broker) { br.Fenced = true })
	case UnfenceBroker:
		return b.changeBroker(r.ID, r.Epoch, func(br *Broker) {
			br.Fenced = false
			br.InControlledShutdown = false
		})
	case BeginControlledShutdown:
		return b.changeBroker(r.ID, r.Epoch, func(br *Broker) { br.InControlledShutdown = true })
	case UnregisterBroker:
		if _, ok := b.img.brokers[r.ID]; !ok {
			return fmt.Errorf("unregister: broker %d is not registered", r.ID)
		}
		b.writableBrokers()
		delete(b.img.brokers, r.ID)
		return nil
	case CreateTopic:
		return b.createTopic(r)
	case RemoveTopic:
		t, ok := b.img.topicsByID[r.ID]
		if !ok {
			return fmt.Errorf("remove: unknown topic id %s", r.ID)
		}
		b.writableTopics()
		delete(b.img.topicsByID, r.ID)
		delete(b.img.topicsByName, t.Name)
		b.img.leaderless -= countLeaderless(t.Partitions)
		return nil
	case AddPartitions:
		return b.addPartitions(r)
	case PartitionChange:
		return b.changePartition(r)
	case SetTopicConfig:
		return b.setTopicConfig(r)
	case ClientQuota:
		return b.applyClientQuota(r)
	case ConfigRecord:
		return b.applyConfigRecord(r)
	case AllocateProducerIDs:
		if r.NextID <= b.img.nextProducerID {
			return fmt.Errorf("producer id mark %d does not advance past %d", r.NextID, b.img.nextProducerID)
		}
		b.img.nextProducerID = r.NextID
		return nil
	case FeatureLevel:
		return b.setFeature(r)
	case AccessControlEntry:
		return b.addACL(r)
	case RemoveAccessControlEntry:
		return b.removeACL(r)
	case UserScramCredential:
		return b.setScram(r)
	case RemoveUserScramCredential:
		return b.removeScram(r)
	case nil:
		return errors.New("nil record")
	default:
		return fmt.Errorf("unsupported record type %T", r)
	}
}

func (b *builder) writableBrokers() {
	if !b.brokerMapCopied {
		b.img.brokers = maps.Clone(b.img.brokers)
		b.brokerMapCopied = true
	}
}

func (b *builder) writableTopics() {
	if !b.topicMapsCopied {
		b.img.topicsByName = maps.Clone(b.img.topicsByName)
		b.img.topicsByID = maps.Clone(b.img.topicsByID)
		b.topicMapsCopied = true
	}
}

// ownTopic returns a builder-private version of t, cloning it (partition
// structs copied, their slices shared until replaced) on first use.
func (b *builder) ownTopic(t *Topic) *Topic {
	if b.ownedTopics[t] {
		return t
	}
	b.writableTopics()
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	b.img.topicsByName[c.Name] = &c
	b.img.topicsByID[c.ID] = &c
	b.ownedTopics[&c] = true
	return &c
}

func (b *builder) registerBroker(r RegisterBroker) error {
	nb := r.Broker
	if err := validateBroker(&nb); err != nil {
		return fmt.Errorf("register broker %d: %w", nb.ID, err)
	}
	if old, ok := b.img.brokers[nb.ID]; ok && nb.Epoch <= old.Epoch {
		return fmt.Errorf("register broker %d: epoch %d is not newer than registered epoch %d", nb.ID, nb.Epoch, old.Epoch)
	}
	b.writableBrokers()
	owned := nb.Clone()
	b.img.brokers[nb.ID] = owned
	b.ownedBrokers[owned] = true
	return nil
}

func (b *builder) changeBroker(id int32, epoch int64, change func(*Broker)) error {
	br, ok := b.img.brokers[id]
	if !ok {
		return fmt.Errorf("broker %d is not registered", id)
	}
	if br.Epoch != epoch {
		return fmt.Errorf("broker %d: epoch %d does not match registered epoch %d", id, epoch, br.Epoch)
	}
	if !b.ownedBrokers[br] {
		b.writableBrokers()
		br = br.Clone()
		b.img.brokers[id] = br
		b.ownedBrokers[br] = true
	}
	change(br)
	return nil
}

func (b *builder) createTopic(r CreateTopic) error {
	if err := validateTopicName(r.Name); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	if r.ID.IsZero() {
		return fmt.Errorf("create topic %q: zero topic id", r.Name)
	}
	if _, ok := b.img.topicsByName[r.Name]; ok {
		return fmt.Errorf("create topic %q: name already exists", r.Name)
	}
	if _, ok := b.img.topicsByID[r.ID]; ok {
		return fmt.Errorf("create topic %q: id %s already exists", r.Name, r.ID)
	}
	if len(r.Partitions) == 0 {
		return fmt.Errorf("create topic %q: no partitions", r.Name)
	}
	if err := validateConfigs(r.Configs); err != nil {
		return fmt.Errorf("create topic %q: %w", r.Name, err)
	}
	parts, err := copyNewPartitions(r.Partitions, 0)
	if err != nil {
		return fmt.Errorf("create topic %q: %w", r.Name, err)
	}
	t := &Topic{Name: r.Name, ID: r.ID, Partitions: parts, Configs: maps.Clone(r.Configs)}
	b.writableTopics()
	b.img.topicsByName[t.Name] = t
	b.img.topicsByID[t.ID] = t
	b.ownedTopics[t] = true
	b.img.leaderless += countLeaderless(parts)
	return nil
}

func (b *builder) addPartitions(r AddPartitions) error {
	t, ok := b.img.topicsByID[r.TopicID]
	if !ok {
		return fmt.Errorf("add partitions: unknown topic id %s", r.TopicID)
	}
	if len(r.Partitions) == 0 {
		return fmt.Errorf("add partitions to %q: no partitions", t.Name)
	}
	parts, err := copyNewPartitions(r.Partitions, len(t.Partitions))
	if err != nil {
		return fmt.Errorf("add partitions to %q: %w", t.Name, err)
	}
	t = b.ownTopic(t)
	t.Partitions = append(t.Partitions, parts...)
	b.img.leaderless += countLeaderless(parts)
	return nil
}

// countLeaderless is the number of ps without a leader.
func countLeaderless(ps []Partition) int {
	n := 0
	for i := range ps {
		if ps[i].Leader == NoLeader {
			n++
		}
	}
	return n
}

// copyNewPartitions validates partitions that must be numbered first,
// first+1, ... and deep-copies them so the caller's record cannot alias the image.
func copyNewPartitions(ps []Partition, first int) ([]Partition, error) {
	if first+len(ps) > MaxPartitionsPerTopic {
		return nil, fmt.Errorf("%d partitions exceed the limit of %d", first+len(ps), MaxPartitionsPerTopic)
	}
	out := make([]Partition, len(ps))
	for i, p := range ps {
		if err := validatePartition(p, int32(first+i)); err != nil {
			return nil, err
		}
		out[i] = p.Clone()
	}
	return out, nil
}

func (b *builder) changePartition(r PartitionChange) error {
	t, ok := b.img.topicsByID[r.TopicID]
	if !ok {
		return fmt.Errorf("partition change: unknown topic id %s", r.TopicID)
	}
	p, ok := t.Partition(r.Partition)
	if !ok {
		return fmt.Errorf("partition change: topic %q has no partition %d", t.Name, r.Partition)
	}
	oldLeader, oldReplicas := p.Leader, p.Replicas
	if r.Replicas != nil {
		p.Replicas = slices.Clone(*r.Replicas)
	}
	if r.ISR != nil {
		p.ISR = slices.Clone(*r.ISR)
	}
	if r.ELR != nil {
		p.ELR = slices.Clone(*r.ELR)
	}
	if r.AddingReplicas != nil {
		p.AddingReplicas = nilIfEmpty(slices.Clone(*r.AddingReplicas))
	}
	if r.RemovingReplicas != nil {
		p.RemovingReplicas = nilIfEmpty(slices.Clone(*r.RemovingReplicas))
	}
	if r.Leader != nil {
		p.Leader = *r.Leader
	}
	if err := validatePartition(p, r.Partition); err != nil {
		return fmt.Errorf("partition change %q/%d: %w", t.Name, r.Partition, err)
	}
	if p.PartitionEpoch == math.MaxInt32 || p.LeaderEpoch == math.MaxInt32 {
		return fmt.Errorf("partition change %q/%d: epoch exhausted", t.Name, r.Partition)
	}
	p.PartitionEpoch++
	// A new leader epoch also when a replica leaves the replica set (a
	// completed or cancelled reassignment), as Kafka's controller bumps it:
	// the leader then starts its followers' state afresh. Without it a
	// leader that missed the change which removed a replica (and let it
	// delete its log) and sees the one adding it back keeps that replica's
	// old fetch position, counts the empty newcomer in sync, and the
	// controller can make it leader: acknowledged records lost (sim seed
	// 580).
	if p.Leader != oldLeader || slices.ContainsFunc(oldReplicas, func(id int32) bool { return !slices.Contains(p.Replicas, id) }) {
		p.LeaderEpoch++
	}
	t = b.ownTopic(t)
	t.Partitions[r.Partition] = p
	if oldLeader == NoLeader {
		b.img.leaderless--
	}
	if p.Leader == NoLeader {
		b.img.leaderless++
	}
	return nil
}

func (b *builder) setTopicConfig(r SetTopicConfig) error {
	t, ok := b.img.topicsByID[r.TopicID]
	if !ok {
		return fmt.Errorf("set config: unknown topic id %s", r.TopicID)
	}
	if err := validateConfigEntry(r.Key, r.Value); err != nil {
		return fmt.Errorf("set config on %q: %w", t.Name, err)
	}
	t = b.ownTopic(t)
	// Configs may still be shared with the previous image; never write into it.
	configs := maps.Clone(t.Configs)
	if r.Value == nil {
		delete(configs, r.Key)
	} else {
		if configs == nil {
			configs = map[string]string{}
		}
		configs[r.Key] = *r.Value
		if len(configs) > MaxConfigsPerTopic {
			return fmt.Errorf("set config on %q: more than %d overrides", t.Name, MaxConfigsPerTopic)
		}
	}
	t.Configs = configs
	return nil
}

// nilIfEmpty keeps one form for "no replicas being added or removed", so
// images built from the log and from a snapshot compare equal.
func nilIfEmpty(ids []int32) []int32 {
	if len(ids) == 0 {
		return nil
	}
	return ids
}
