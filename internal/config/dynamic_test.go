package config

import (
	"errors"
	"reflect"
	"testing"
)

const (
	leaderRate   = "leader.replication.throttled.rate"
	followerRate = "follower.replication.throttled.rate"
)

// TestDynamicPrecedence: per-broker dynamic > cluster-default dynamic >
// static > default, for the effective value, the DescribeConfigs source
// and the synonyms (most specific first, as Kafka lists them).
func TestDynamicPrecedence(t *testing.T) {
	static := mustBroker(t, map[string]string{"node.id": "1", leaderRate: "3000"})
	bare := mustBroker(t, map[string]string{"node.id": "1"})
	perBroker := map[string]string{leaderRate: "1000"}
	clusterDefault := map[string]string{leaderRate: "2000"}
	tests := []struct {
		name     string
		b        *Broker
		d        Dynamic
		want     int64
		source   ConfigSource
		synonyms []ConfigSynonym
	}{
		{"all four", static, Dynamic{Broker: perBroker, Default: clusterDefault}, 1000, SourceDynamicBroker, []ConfigSynonym{
			{leaderRate, "1000", SourceDynamicBroker}, {leaderRate, "2000", SourceDynamicDefaultBroker},
			{leaderRate, "3000", SourceStaticBroker}, {leaderRate, "9223372036854775807", SourceDefault}}},
		{"default over static", static, Dynamic{Default: clusterDefault}, 2000, SourceDynamicDefaultBroker, []ConfigSynonym{
			{leaderRate, "2000", SourceDynamicDefaultBroker}, {leaderRate, "3000", SourceStaticBroker},
			{leaderRate, "9223372036854775807", SourceDefault}}},
		{"static", static, Dynamic{Broker: map[string]string{followerRate: "5"}}, 3000, SourceStaticBroker, []ConfigSynonym{
			{leaderRate, "3000", SourceStaticBroker}, {leaderRate, "9223372036854775807", SourceDefault}}},
		{"default", bare, Dynamic{}, 9223372036854775807, SourceDefault, []ConfigSynonym{
			{leaderRate, "9223372036854775807", SourceDefault}}},
		{"unparsable dynamic value is skipped", static, Dynamic{Broker: map[string]string{leaderRate: "fast"}}, 3000, SourceDynamicBroker, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DynamicLong(tt.b, tt.d, leaderRate)
			if err != nil || got != tt.want {
				t.Fatalf("DynamicLong = %d, %v; want %d", got, err, tt.want)
			}
			if tt.synonyms == nil {
				return
			}
			e := findEntry(t, DescribeBroker(tt.b, tt.d), leaderRate)
			if e.Source != tt.source || e.ReadOnly {
				t.Errorf("source %v read-only %v, want %v and dynamic", e.Source, e.ReadOnly, tt.source)
			}
			if !reflect.DeepEqual(e.Synonyms, tt.synonyms) {
				t.Errorf("synonyms = %v\nwant %v", e.Synonyms, tt.synonyms)
			}
		})
	}
	if _, err := DynamicLong(static, Dynamic{}, "num.io.threads"); err == nil {
		t.Error("DynamicLong of an int property did not fail")
	}
}

// TestDynamicIgnoredForReadOnly: a value stored for a read-only property
// (which the controller refuses, so only from another version's registry)
// never changes what the broker shows or uses.
func TestDynamicIgnoredForReadOnly(t *testing.T) {
	b := mustBroker(t, map[string]string{"node.id": "1"})
	e := findEntry(t, DescribeBroker(b, Dynamic{Broker: map[string]string{"num.partitions": "3"}}), "num.partitions")
	if e.Value != "1" || e.Source != SourceDefault || !e.ReadOnly {
		t.Errorf("num.partitions = %q from %v read-only %v", e.Value, e.Source, e.ReadOnly)
	}
}

// TestDescribeBrokerDefault: the "" resource lists only the cluster-wide
// dynamic defaults, with no per-broker synonym.
func TestDescribeBrokerDefault(t *testing.T) {
	b := mustBroker(t, map[string]string{"node.id": "1", leaderRate: "3000"})
	d := Dynamic{Broker: map[string]string{leaderRate: "1000"}, Default: map[string]string{leaderRate: "2000"}}
	got := DescribeBrokerDefault(b, d)
	if len(got) != 1 || got[0].Name != leaderRate || got[0].Value != "2000" || got[0].Source != SourceDynamicDefaultBroker {
		t.Fatalf("DescribeBrokerDefault = %+v", got)
	}
	want := []ConfigSynonym{{leaderRate, "2000", SourceDynamicDefaultBroker}, {leaderRate, "3000", SourceStaticBroker},
		{leaderRate, "9223372036854775807", SourceDefault}}
	if !reflect.DeepEqual(got[0].Synonyms, want) {
		t.Errorf("synonyms = %v", got[0].Synonyms)
	}
	if got := DescribeBrokerDefault(b, Dynamic{Broker: d.Broker}); len(got) != 0 {
		t.Errorf("no default set, but DescribeBrokerDefault = %+v", got)
	}
}

func TestValidateDynamic(t *testing.T) {
	tests := []struct {
		name      string
		perBroker bool
		configs   map[string]string
		want      error // sentinel, or nil
		cfgErr    bool  // a *Error
	}{
		{"per broker", true, map[string]string{leaderRate: "1048576", followerRate: "0"}, nil, false},
		{"cluster default", false, map[string]string{leaderRate: "1048576"}, nil, false},
		{"empty", true, nil, nil, false},
		{"read-only", true, map[string]string{leaderRate: "1", "num.partitions": "4"}, ErrNotDynamic, false},
		{"read-only at default", false, map[string]string{"log.dirs": "/x"}, ErrNotDynamic, false},
		{"negative", true, map[string]string{leaderRate: "-1"}, nil, true},
		{"not a number", false, map[string]string{followerRate: "fast"}, nil, true},
		{"unknown", true, map[string]string{"no.such.property": "1"}, nil, true},
		{"topic name", true, map[string]string{"retention.ms": "1"}, nil, true},
		{"ignored compat property", true, map[string]string{"zookeeper.connect": "x:2181"}, nil, true},
	}
	for _, tt := range tests {
		err := ValidateDynamic(tt.perBroker, tt.configs)
		var ce *Error
		switch {
		case tt.want != nil && !errors.Is(err, tt.want):
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		case tt.cfgErr && !errors.As(err, &ce):
			t.Errorf("%s: err = %v, want a *config.Error", tt.name, err)
		case tt.want == nil && !tt.cfgErr && err != nil:
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
}

// TestValidateDynamicPerBrokerOnly: a per-broker property may not be set
// as the cluster default. No registry property is per-broker yet, so the
// check runs against one made for the test.
func TestValidateDynamicPerBrokerOnly(t *testing.T) {
	p := theRegistry().byName[leaderRate]
	saved := p.Update
	p.Update = UpdatePerBroker
	defer func() { p.Update = saved }()
	if err := ValidateDynamic(false, map[string]string{leaderRate: "1"}); !errors.Is(err, ErrPerBrokerOnly) {
		t.Errorf("cluster default: err = %v, want ErrPerBrokerOnly", err)
	}
	if err := ValidateDynamic(true, map[string]string{leaderRate: "1"}); err != nil {
		t.Errorf("per broker: %v", err)
	}
}

// TestDynamicProperties: a property is dynamic only if the broker applies
// a new value at runtime. Making another one dynamic needs the node to
// read it from the image (internal/node/replication_throttle.go does for
// the replication rates, internal/node/log_moves.go for the log-dir move
// rate), so this list changes with that code. None is a topic synonym:
// DescribeTopic and the topic defaults do not consult dynamic values.
func TestDynamicProperties(t *testing.T) {
	var got []string
	for _, p := range Properties() {
		if p.Update == UpdateReadOnly {
			continue
		}
		got = append(got, p.Name)
		if p.TopicName != "" || p.Sensitive || p.Ignored || p.Name == "" {
			t.Errorf("%s: a dynamic property may not be a topic synonym, sensitive or ignored", p.Name)
		}
	}
	if want := []string{followerRate, leaderRate, "replica.alter.log.dirs.io.max.bytes.per.second"}; !reflect.DeepEqual(got, want) {
		t.Errorf("dynamic properties = %v, want %v", got, want)
	}
}
