package metadata

import (
	"slices"

	"github.com/skein-log/skein/internal/authz"
)

// Image is an immutable snapshot of the cluster metadata: what every broker
// knows after applying the metadata log up to some point.
//
// Copy-on-write: an Apply copies the topic and broker maps (pointers only) and
// clones just the topics and brokers it changes; all other *Topic and *Broker
// values are shared with the previous image. Copying a map of pointers is
// O(topics) per Apply, which is cheap at the scale we target (tens of
// thousands of topics); a persistent tree would only pay off far beyond that.
type Image struct {
	clusterID      string
	version        int64
	nextProducerID int64

	topicsByName map[string]*Topic
	topicsByID   map[TopicID]*Topic
	brokers      map[int32]*Broker
	// quotas are the client quotas (quotas.go), by entity.
	quotas map[QuotaEntity]map[string]float64
	// brokerConfigs are the dynamic broker configs (broker_configs.go),
	// by resource name: "" for the cluster default, "N" for broker N.
	brokerConfigs map[string]map[string]string

	// Sorted views, rebuilt only when an Apply changes topics or brokers, so
	// Metadata requests do not sort on every call.
	sortedTopics  []*Topic
	sortedBrokers []*Broker

	// acls is the authorizer's view of the ACL records; nil when none
	// were ever applied.
	acls *authz.Set
	// scram holds the SCRAM credentials, by user and mechanism.
	scram map[scramKey]UserScramCredential
	// features are the finalized feature levels (features.go), by name;
	// copied on write.
	features map[string]int16
	// leaderless counts the partitions without a leader (NoLeader),
	// kept by every Apply that adds, changes or removes partitions: the
	// active controller's maintenance elects leaders for them ten times a
	// second and walks the partitions only when there is one.
	leaderless int
}

// Empty returns the image of a cluster with no brokers and no topics.
func Empty(clusterID string) *Image {
	return &Image{
		clusterID:    clusterID,
		topicsByName: map[string]*Topic{},
		topicsByID:   map[TopicID]*Topic{},
		brokers:      map[int32]*Broker{},
	}
}

// ClusterID is the cluster's identity, reported in Metadata responses.
func (im *Image) ClusterID() string { return im.clusterID }

// Version is the number of records applied since Empty, unless the caller
// replaced it with a log offset via WithVersion.
func (im *Image) Version() int64 { return im.version }

// WithVersion returns a copy of the image whose Version is v, for callers that
// track the metadata log offset the image reflects. The copy shares all state.
func (im *Image) WithVersion(v int64) *Image {
	c := *im
	c.version = v
	return &c
}

// NextProducerID is the first producer ID not yet handed out.
func (im *Image) NextProducerID() int64 { return im.nextProducerID }

// Topic looks a topic up by name. The result is shared: do not modify it.
func (im *Image) Topic(name string) (*Topic, bool) {
	t, ok := im.topicsByName[name]
	return t, ok
}

// TopicByID looks a topic up by ID. The result is shared: do not modify it.
func (im *Image) TopicByID(id TopicID) (*Topic, bool) {
	t, ok := im.topicsByID[id]
	return t, ok
}

// Topics returns all topics sorted by name. The slice is the caller's; the
// topics are shared and must not be modified.
func (im *Image) Topics() []*Topic {
	return slices.Clone(im.sortedTopics)
}

// LeaderlessPartitions is the number of partitions without a leader.
func (im *Image) LeaderlessPartitions() int { return im.leaderless }

// TopicCount is the number of topics, without building a slice.
func (im *Image) TopicCount() int { return len(im.topicsByName) }

// Broker looks a broker up by ID. The result is shared: do not modify it.
func (im *Image) Broker(id int32) (*Broker, bool) {
	b, ok := im.brokers[id]
	return b, ok
}

// Brokers returns all registered brokers sorted by ID. The slice is the
// caller's; the brokers are shared and must not be modified.
func (im *Image) Brokers() []*Broker {
	return slices.Clone(im.sortedBrokers)
}

// IsActive reports whether a broker may lead partitions or join an ISR:
// registered, unfenced and not shutting down.
func (im *Image) IsActive(id int32) bool {
	b, ok := im.brokers[id]
	return ok && !b.Fenced && !b.InControlledShutdown
}
