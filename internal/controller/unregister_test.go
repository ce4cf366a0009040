package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

func TestUnregisterBroker(t *testing.T) {
	// Brokers 1-5; 4 holds nothing; 5 is being added to t/1; 3 is fenced
	// and still listed in t/0, where it is the only ELR member left of
	// t/2.
	base := cluster(t, ids(1, 2, 3, 4, 5, 6))
	base = withTopic(t, base, "t", topicID(1),
		part(1, ids(1, 2, 3), ids(1, 2), nil),
		metadata.Partition{Replicas: ids(2, 5, 1), ISR: ids(1, 2), Leader: 1, AddingReplicas: ids(5), RemovingReplicas: ids(1)},
		part(metadata.NoLeader, ids(3), nil, ids(3)),
	)
	base = fence(t, base, 3)
	base = fence(t, base, 6)
	tests := []struct {
		name    string
		id      int32
		want    *kerr.Error
		mention []string // in the error message
	}{
		{name: "unknown broker", id: 9, want: kerr.BrokerIDNotRegistered},
		{name: "live broker without replicas", id: 4},
		{name: "fenced broker without replicas", id: 6},
		{name: "live leader holding replicas", id: 1, want: kerr.InvalidRequest, mention: []string{"t-0", "t-1"}},
		{name: "live broker being added", id: 5, want: kerr.InvalidRequest, mention: []string{"t-1"}},
		{name: "fenced broker holding replicas", id: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := UnregisterBroker(base, tc.id)
			wantCode(t, err, tc.want)
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %s", err, m)
				}
			}
			if tc.want != nil {
				if recs != nil {
					t.Fatalf("refused with records %+v", recs)
				}
				return
			}
			if last := recs[len(recs)-1]; last != (metadata.UnregisterBroker{ID: tc.id}) {
				t.Fatalf("last record = %+v, want UnregisterBroker{%d}", last, tc.id)
			}
			after := apply(t, base, recs...)
			if _, ok := after.Broker(tc.id); ok {
				t.Fatalf("broker %d still registered", tc.id)
			}
			for _, tp := range after.Topics() {
				for _, p := range tp.Partitions {
					if slices.Contains(p.ISR, tc.id) || p.Leader == tc.id {
						t.Fatalf("%s/%d keeps unregistered broker %d: leader %d, ISR %v", tp.Name, p.Index, tc.id, p.Leader, p.ISR)
					}
				}
			}
		})
	}
}

// An unregistered broker that held the only ELR copy keeps it: it may come
// back, and dropping it would leave the partition no clean leader ever.
func TestUnregisterBrokerKeepsELR(t *testing.T) {
	im := cluster(t, ids(1, 2))
	im = withTopic(t, im, "t", topicID(1), part(metadata.NoLeader, ids(1), nil, ids(1)))
	im = fence(t, im, 1)
	recs, err := UnregisterBroker(im, 1)
	wantCode(t, err, nil)
	after := apply(t, im, recs...)
	if p := mustPartition(t, after, "t", 0); !slices.Equal(p.ELR, ids(1)) {
		t.Fatalf("ELR = %v, want [1]", p.ELR)
	}
}

func TestUnregisterBrokerNamesAFewPartitions(t *testing.T) {
	im := cluster(t, ids(1))
	parts := make([]metadata.Partition, 25)
	for i := range parts {
		parts[i] = part(1, ids(1), ids(1), nil)
	}
	im = withTopic(t, im, "big", topicID(2), parts...)
	_, err := UnregisterBroker(im, 1)
	wantCode(t, err, kerr.InvalidRequest)
	msg := err.Error()
	if !strings.Contains(msg, "25 partitions") || !strings.Contains(msg, "and 15 more") || strings.Contains(msg, fmt.Sprintf("big-%d", maxNamedPartitions)) {
		t.Fatalf("message %q should count 25, name %d and elide the rest", msg, maxNamedPartitions)
	}
}
