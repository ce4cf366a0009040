package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/node"
)

const (
	leaderRateKey   = "leader.replication.throttled.rate"
	followerRateKey = "follower.replication.throttled.rate"
	unlimitedRate   = "9223372036854775807"
)

// TestDynamicBrokerConfigs (issue 15): franz-go's kadm sets the
// replication throttle rates per broker and as the cluster default
// (IncrementalAlterConfigs, sent to the broker named and forwarded to the
// active controller), DescribeConfigs shows each value's source and
// synonyms in Kafka's precedence, the brokers' throttles take the new
// rates at once (skein_replication_throttle_rate_bytes), a read-only
// property and a bad value are refused with INVALID_REQUEST, legacy
// AlterConfigs replaces a broker's set, DELETE falls back to the next
// source, and the values survive a restart (they are metadata records).
func TestDynamicBrokerConfigs(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())

	alter := func(configs []kadm.AlterConfig, brokers ...int32) error {
		t.Helper()
		res, err := adm.AlterBrokerConfigs(ctx, configs, brokers...)
		if err != nil {
			t.Fatalf("AlterBrokerConfigs %v: %v", brokers, err)
		}
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
		return nil
	}
	set := func(k, v string) kadm.AlterConfig { return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v} }
	del := func(k string) kadm.AlterConfig { return kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k} }

	if err := alter([]kadm.AlterConfig{set(leaderRateKey, "2097152")}, 2); err != nil {
		t.Fatal(err)
	}
	if err := alter([]kadm.AlterConfig{set(leaderRateKey, "4194304"), set(followerRateKey, "1048576")}); err != nil {
		t.Fatal(err)
	}
	syn := func(src kmsg.ConfigSource, v string) string { return src.String() + ":" + v }
	requireBrokerConfig(ctx, t, adm, 2, leaderRateKey, "2097152", kmsg.ConfigSourceDynamicBrokerConfig,
		syn(kmsg.ConfigSourceDynamicBrokerConfig, "2097152"), syn(kmsg.ConfigSourceDynamicDefaultBrokerConfig, "4194304"),
		syn(kmsg.ConfigSourceDefaultConfig, unlimitedRate))
	requireBrokerConfig(ctx, t, adm, 2, followerRateKey, "1048576", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		syn(kmsg.ConfigSourceDynamicDefaultBrokerConfig, "1048576"), syn(kmsg.ConfigSourceDefaultConfig, unlimitedRate))
	requireBrokerConfig(ctx, t, adm, 3, leaderRateKey, "4194304", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		syn(kmsg.ConfigSourceDynamicDefaultBrokerConfig, "4194304"), syn(kmsg.ConfigSourceDefaultConfig, unlimitedRate))
	requireBrokerConfig(ctx, t, adm, 1, "num.partitions", "1", kmsg.ConfigSourceDefaultConfig)

	// Applied at runtime: each broker's throttle has its own rates.
	awaitThrottleRate(ctx, t, c.brokers[1], "leader", 2097152)
	awaitThrottleRate(ctx, t, c.brokers[1], "follower", 1048576)
	awaitThrottleRate(ctx, t, c.brokers[0], "leader", 4194304)
	awaitThrottleRate(ctx, t, c.brokers[2], "follower", 1048576)

	// The cluster default resource lists the defaults only (each broker
	// answers it from its own image: every one has them by now, as the
	// throttle rates above waited for all three).
	cl := c.client()
	for _, b := range []int32{1, 2, 3} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType = kmsg.ConfigResourceTypeBroker
		req.Resources = append(req.Resources, rr)
		kr, err := cl.Broker(int(b)).Request(ctx, req)
		resp, _ := kr.(*kmsg.DescribeConfigsResponse)
		if err != nil || resp == nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("describe the default through broker %d: %v %+v", b, err, resp)
		}
		var keys []string
		for _, cfg := range resp.Resources[0].Configs {
			keys = append(keys, cfg.Name+"="+derefOr(cfg.Value)+"/"+cfg.Source.String())
		}
		if want := followerRateKey + "=1048576/DYNAMIC_DEFAULT_BROKER_CONFIG " + leaderRateKey + "=4194304/DYNAMIC_DEFAULT_BROKER_CONFIG"; strings.Join(keys, " ") != want {
			t.Errorf("default resource through broker %d = %q, want %q", b, keys, want)
		}
	}

	// Refusals, as Kafka's KRaft brokers answer them.
	for _, bad := range []struct {
		cfg  kadm.AlterConfig
		want string
	}{
		{set("num.partitions", "3"), "cannot update these configs dynamically"},
		{set(leaderRateKey, "-1"), "must be an integer of at least 0"},
		{set("no.such.property", "1"), "unknown property"},
	} {
		err := alter([]kadm.AlterConfig{bad.cfg}, 1)
		if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("SET %s=%s: %v, want INVALID_REQUEST saying %q", bad.cfg.Name, *bad.cfg.Value, err, bad.want)
		}
	}
	if err := alter([]kadm.AlterConfig{{Op: kadm.AppendConfig, Name: leaderRateKey, Value: kmsg.StringPtr("1")}}, 1); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("APPEND to a long: %v, want INVALID_CONFIG", err)
	}

	// Legacy AlterConfigs replaces broker 2's whole set.
	res, err := adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{set(followerRateKey, "524288")}, 2)
	if err != nil || res[0].Err != nil {
		t.Fatalf("AlterConfigs: %v %+v", err, res)
	}
	requireBrokerConfig(ctx, t, adm, 2, followerRateKey, "524288", kmsg.ConfigSourceDynamicBrokerConfig,
		syn(kmsg.ConfigSourceDynamicBrokerConfig, "524288"), syn(kmsg.ConfigSourceDynamicDefaultBrokerConfig, "1048576"),
		syn(kmsg.ConfigSourceDefaultConfig, unlimitedRate))
	requireBrokerConfig(ctx, t, adm, 2, leaderRateKey, "4194304", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		syn(kmsg.ConfigSourceDynamicDefaultBrokerConfig, "4194304"), syn(kmsg.ConfigSourceDefaultConfig, unlimitedRate))
	awaitThrottleRate(ctx, t, c.brokers[1], "leader", 4194304)

	// They are metadata: a restarted broker has them.
	c.stop(1)
	c.start(1)
	c.waitRegistered()
	awaitThrottleRate(ctx, t, c.brokers[1], "follower", 524288)

	// DELETE: back to the default, then to nothing set at all.
	if err := alter([]kadm.AlterConfig{del(followerRateKey)}, 2); err != nil {
		t.Fatal(err)
	}
	if err := alter([]kadm.AlterConfig{del(leaderRateKey), del(followerRateKey)}); err != nil {
		t.Fatal(err)
	}
	for i, b := range c.brokers {
		requireBrokerConfig(ctx, t, adm, int32(i+1), leaderRateKey, unlimitedRate, kmsg.ConfigSourceDefaultConfig)
		awaitThrottleRate(ctx, t, b, "leader", 9223372036854775807)
		awaitThrottleRate(ctx, t, b, "follower", 9223372036854775807)
	}
}

// requireBrokerConfig describes broker's config key (kadm sends it to that
// broker) until its value, source and, when given, its synonyms as
// SOURCE:value are the ones wanted: a change answered by another broker
// reaches this one's image a moment later, as in Kafka.
func requireBrokerConfig(ctx context.Context, t *testing.T, adm *kadm.Client, broker int32, key, value string, source kmsg.ConfigSource, synonyms ...string) {
	t.Helper()
	for {
		mismatch := brokerConfigMismatch(ctx, t, adm, broker, key, value, source, synonyms)
		if mismatch == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal(mismatch)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// brokerConfigMismatch says how broker's key differs from what is wanted,
// "" if it does not.
func brokerConfigMismatch(ctx context.Context, t *testing.T, adm *kadm.Client, broker int32, key, value string, source kmsg.ConfigSource, synonyms []string) string {
	t.Helper()
	rcs, err := adm.DescribeBrokerConfigs(ctx, broker)
	if err != nil {
		t.Fatalf("describe broker %d: %v", broker, err)
	}
	rc, err := rcs.On(fmt.Sprint(broker), nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe broker %d: %v %v", broker, err, rc.Err)
	}
	for _, cfg := range rc.Configs {
		if cfg.Key != key {
			continue
		}
		if cfg.MaybeValue() != value || cfg.Source != source {
			return fmt.Sprintf("broker %d %s = %q from %s, want %q from %s", broker, key, cfg.MaybeValue(), cfg.Source, value, source)
		}
		if synonyms == nil {
			return ""
		}
		var got []string
		for _, s := range cfg.Synonyms {
			got = append(got, s.Source.String()+":"+derefOr(s.Value))
		}
		if strings.Join(got, " ") != strings.Join(synonyms, " ") {
			return fmt.Sprintf("broker %d %s synonyms %q, want %q", broker, key, got, synonyms)
		}
		return ""
	}
	return fmt.Sprintf("broker %d describes no %s", broker, key)
}

// awaitThrottleRate waits until broker b's replication throttle of side
// (leader or follower) runs at rate: it reads the rates of the metadata
// image it has applied, which may trail the controller's by a moment.
func awaitThrottleRate(ctx context.Context, t *testing.T, b *node.Broker, side string, rate float64) {
	t.Helper()
	for {
		got := gaugeValue(t, b, "skein_replication_throttle_rate_bytes", "side", side)
		if got == rate {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s throttle rate = %v, want %v", side, got, rate)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
