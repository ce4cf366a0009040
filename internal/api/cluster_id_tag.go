package api

import "github.com/twmb/franz-go/pkg/kmsg"

// ClusterIDTag is the tagged field in which a node refusing a request for
// INCONSISTENT_CLUSTER_ID (a broker's registration, a metadata or replica
// fetch) names its own cluster id: the error code alone cannot tell the
// refused node's operator which id its peers have. Clients ignore unknown
// tags.
const ClusterIDTag = 0x5E12

// TagClusterID adds a cluster id to a refusal's tagged fields.
func TagClusterID(tags *kmsg.Tags, clusterID string) {
	tags.Set(ClusterIDTag, []byte(clusterID))
}

// TaggedClusterID reads a refusal's cluster id, "" if absent.
func TaggedClusterID(tags kmsg.Tags) string {
	var id string
	tags.Each(func(key uint32, val []byte) {
		if key == ClusterIDTag {
			id = string(val)
		}
	})
	return id
}
