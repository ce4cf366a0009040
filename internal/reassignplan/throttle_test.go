package reassignplan

import (
	"maps"
	"slices"
	"testing"
)

func TestThrottles(t *testing.T) {
	current := []Assignment{
		{Topic: "a", Partition: 0, Replicas: []int32{1, 2}},
		{Topic: "a", Partition: 1, Replicas: []int32{2, 3}},
		{Topic: "b", Partition: 0, Replicas: []int32{1, 2, 3}},
	}
	tests := []struct {
		name    string
		target  []Assignment
		want    map[string]Throttle
		brokers []int32
	}{
		{"add one replica", []Assignment{{Topic: "a", Partition: 0, Replicas: []int32{1, 2, 4}}},
			map[string]Throttle{"a": {Leader: "0:1,0:2", Follower: "0:4"}}, []int32{1, 2, 4}},
		{"move two partitions of one topic", []Assignment{
			{Topic: "a", Partition: 0, Replicas: []int32{3, 4}},
			{Topic: "a", Partition: 1, Replicas: []int32{2, 4}},
		}, map[string]Throttle{"a": {Leader: "0:1,0:2,1:2,1:3", Follower: "0:3,0:4,1:4"}}, []int32{1, 2, 3, 4}},
		{"only removing copies nothing", []Assignment{{Topic: "b", Partition: 0, Replicas: []int32{1, 2}}},
			map[string]Throttle{}, nil},
		{"reordering copies nothing", []Assignment{{Topic: "a", Partition: 0, Replicas: []int32{2, 1}}},
			map[string]Throttle{}, nil},
		{"unknown partition is skipped", []Assignment{{Topic: "c", Partition: 0, Replicas: []int32{5}}},
			map[string]Throttle{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, brokers := Throttles(current, tt.target)
			if !maps.Equal(got, tt.want) {
				t.Errorf("Throttles = %v, want %v", got, tt.want)
			}
			if !slices.Equal(brokers, tt.brokers) {
				t.Errorf("brokers = %v, want %v", brokers, tt.brokers)
			}
		})
	}
}
