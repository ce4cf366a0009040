package metrics

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestResponseErrorCode(t *testing.T) {
	fetchTop := kmsg.NewPtrFetchResponse()
	fetchTop.ErrorCode = 71 // INVALID_FETCH_SESSION_EPOCH

	fetchPartition := kmsg.NewPtrFetchResponse()
	fetchPartition.Topics = []kmsg.FetchResponseTopic{{Partitions: []kmsg.FetchResponseTopicPartition{{}, {ErrorCode: 1}}}}

	metadataTopic := kmsg.NewPtrMetadataResponse()
	metadataTopic.Topics = []kmsg.MetadataResponseTopic{{}, {ErrorCode: 3}}

	metadataPartition := kmsg.NewPtrMetadataResponse()
	metadataPartition.Topics = []kmsg.MetadataResponseTopic{{Partitions: []kmsg.MetadataResponseTopicPartition{{ErrorCode: 5}}}}

	apiVersions := kmsg.NewPtrApiVersionsResponse()
	apiVersions.ErrorCode = 35
	apiVersions.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 0}}

	createTopics := kmsg.NewPtrCreateTopicsResponse()
	createTopics.Topics = []kmsg.CreateTopicsResponseTopic{{Topic: "a"}, {Topic: "b", ErrorCode: 36}}

	// A top-level code wins over a nested one.
	describeCluster := kmsg.NewPtrDescribeClusterResponse()
	describeCluster.ErrorCode = 29

	tests := []struct {
		name string
		resp kmsg.Response
		want int16
	}{
		{"nil (acks=0)", nil, 0},
		{"produce ok", produceResponse(0), 0},
		{"produce partition error", produceResponse(6), 6},
		{"fetch ok", kmsg.NewPtrFetchResponse(), 0},
		{"fetch top-level", fetchTop, 71},
		{"fetch partition", fetchPartition, 1},
		{"metadata ok", kmsg.NewPtrMetadataResponse(), 0},
		{"metadata topic", metadataTopic, 3},
		{"metadata partition", metadataPartition, 5},
		{"api versions", apiVersions, 35},
		{"create topics", createTopics, 36},
		{"describe cluster", describeCluster, 29},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResponseErrorCode(tt.resp); got != tt.want {
				t.Errorf("ResponseErrorCode = %d, want %d", got, tt.want)
			}
		})
	}
}

// Every response type kmsg knows is searchable without panicking, so a
// handler added later cannot break request metrics.
func TestResponseErrorCodeEveryResponseType(t *testing.T) {
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		resp := kmsg.ResponseForKey(key)
		if resp == nil {
			continue
		}
		if got := ResponseErrorCode(resp); got != 0 {
			t.Errorf("%s: default response has error code %d, want 0", kmsg.NameForKey(key), got)
		}
	}
}

// A response with more entries than the search budget costs bounded work
// and reports no error rather than scanning everything.
func TestResponseErrorCodeBudget(t *testing.T) {
	r := kmsg.NewPtrMetadataResponse()
	r.Topics = make([]kmsg.MetadataResponseTopic, maxErrorSearchItems+10)
	r.Topics[len(r.Topics)-1].ErrorCode = 3
	if got := ResponseErrorCode(r); got != 0 {
		t.Errorf("ResponseErrorCode past the budget = %d, want 0", got)
	}
	r.Topics[10].ErrorCode = 5
	if got := ResponseErrorCode(r); got != 5 {
		t.Errorf("ResponseErrorCode within the budget = %d, want 5", got)
	}
}
