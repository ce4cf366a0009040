package controller

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
)

const leaderRate = "leader.replication.throttled.rate"

func strp(s string) *string { return &s }

func TestAlterBrokerConfigs(t *testing.T) {
	im, err := metadata.Empty("c").Apply(metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: "1", Name: leaderRate, Value: strp("10")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		resource string
		set      map[string]*string
		want     []metadata.Record
		code     *kerr.Error
	}{
		{"set on broker", "2", map[string]*string{leaderRate: strp("100")},
			[]metadata.Record{metadata.ConfigRecord{ResourceType: 4, ResourceName: "2", Name: leaderRate, Value: strp("100")}}, nil},
		{"set as default", "", map[string]*string{leaderRate: strp("100")},
			[]metadata.Record{metadata.ConfigRecord{ResourceType: 4, ResourceName: "", Name: leaderRate, Value: strp("100")}}, nil},
		{"delete", "1", map[string]*string{leaderRate: nil},
			[]metadata.Record{metadata.ConfigRecord{ResourceType: 4, ResourceName: "1", Name: leaderRate}}, nil},
		{"unchanged writes nothing", "1", map[string]*string{leaderRate: strp("10")}, nil, nil},
		{"delete of nothing writes nothing", "2", map[string]*string{leaderRate: nil}, nil, nil},
		{"read-only", "1", map[string]*string{"num.partitions": strp("3")}, nil, kerr.InvalidRequest},
		{"bad value", "1", map[string]*string{leaderRate: strp("-5")}, nil, kerr.InvalidRequest},
		{"bad resource", "x", map[string]*string{leaderRate: strp("5")}, nil, kerr.InvalidRequest},
		{"negative broker", "-1", map[string]*string{leaderRate: strp("5")}, nil, kerr.InvalidRequest},
	}
	for _, tt := range tests {
		recs, err := AlterBrokerConfigs(im, tt.resource, tt.set, config.ValidateDynamic)
		if tt.code != nil {
			if !errors.Is(err, tt.code) {
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(recs, tt.want) {
			t.Errorf("%s: records = %+v, want %+v", tt.name, recs, tt.want)
		}
		if _, err := im.Apply(recs...); err != nil {
			t.Errorf("%s: records do not apply: %v", tt.name, err)
		}
	}
	_, err = AlterBrokerConfigs(im, "1", map[string]*string{"num.partitions": strp("3")}, config.ValidateDynamic)
	if !errors.Is(err, config.ErrNotDynamic) {
		t.Errorf("read-only: err = %v does not carry config.ErrNotDynamic", err)
	}
}
