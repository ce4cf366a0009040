package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBrokerResourceSentToAnotherBroker (issue 15): a broker's config
// resource sent to another broker is refused by the broker that received
// it with Kafka's INVALID_REQUEST, "Unexpected broker id, expected N or
// empty string, but received M", in DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs alike, whether that broker is the active
// controller or forwards to it; the other resources of the same request
// are answered in their places, the broker's own and the cluster default
// ("") are altered, and the refused one changes nothing. On a controller
// listener any broker's resource may be altered.
func TestBrokerResourceSentToAnotherBroker(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.client()
	adm := observerClient(t, c.addrs())
	const topic = "reshape-configs"
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	wantRefusal := func(api string, via, other int32, code int16, msg *string) {
		t.Helper()
		want := fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %d", via, other)
		if code != kerr.InvalidRequest.Code || derefOr(msg) != want {
			t.Errorf("%s of broker %d through broker %d: %v %q, want INVALID_REQUEST %q", api, other, via, kerr.ErrorForCode(code), derefOr(msg), want)
		}
	}
	for via := int32(1); via <= 3; via++ {
		other := via%3 + 1
		// Distinct per broker, so each broker's own change is told apart.
		value := fmt.Sprint(1048576 * int(via))

		desc := kmsg.NewPtrDescribeConfigsRequest()
		for _, name := range []string{fmt.Sprint(other), fmt.Sprint(via)} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
			desc.Resources = append(desc.Resources, rr)
		}
		dr, err := desc.RequestWith(ctx, cl.Broker(int(via)))
		if err != nil || len(dr.Resources) != 2 {
			t.Fatalf("DescribeConfigs through %d: %v %+v", via, err, dr)
		}
		wantRefusal("DescribeConfigs", via, other, dr.Resources[0].ErrorCode, dr.Resources[0].ErrorMessage)
		if dr.Resources[1].ErrorCode != 0 || len(dr.Resources[1].Configs) == 0 {
			t.Errorf("DescribeConfigs of broker %d through itself: %v", via, kerr.ErrorForCode(dr.Resources[1].ErrorCode))
		}

		// IncrementalAlterConfigs: a topic, the other broker, this broker
		// and the cluster default, in one request.
		iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
		for _, res := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{
			{kmsg.ConfigResourceTypeTopic, topic},
			{kmsg.ConfigResourceTypeBroker, fmt.Sprint(other)},
			{kmsg.ConfigResourceTypeBroker, fmt.Sprint(via)},
			{kmsg.ConfigResourceTypeBroker, ""},
		} {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = res.typ, res.name
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Value = leaderRateKey, kmsg.StringPtr(value)
			if res.typ == kmsg.ConfigResourceTypeTopic {
				cfg.Name = "retention.ms"
			}
			rr.Configs = append(rr.Configs, cfg)
			iac.Resources = append(iac.Resources, rr)
		}
		ir, err := iac.RequestWith(ctx, cl.Broker(int(via)))
		if err != nil || len(ir.Resources) != 4 {
			t.Fatalf("IncrementalAlterConfigs through %d: %v %+v", via, err, ir)
		}
		for i, want := range []string{topic, fmt.Sprint(other), fmt.Sprint(via), ""} {
			if got := ir.Resources[i].ResourceName; got != want {
				t.Fatalf("IncrementalAlterConfigs answer %d is for %q, want %q", i, got, want)
			}
		}
		wantRefusal("IncrementalAlterConfigs", via, other, ir.Resources[1].ErrorCode, ir.Resources[1].ErrorMessage)
		for _, i := range []int{0, 2, 3} {
			if code := ir.Resources[i].ErrorCode; code != 0 {
				t.Errorf("IncrementalAlterConfigs of %q through %d: %v %s", ir.Resources[i].ResourceName, via, kerr.ErrorForCode(code), derefOr(ir.Resources[i].ErrorMessage))
			}
		}
		requireBrokerConfig(ctx, t, adm, via, leaderRateKey, value, kmsg.ConfigSourceDynamicBrokerConfig)

		// Legacy AlterConfigs: the other broker alone is refused with
		// nothing left to forward.
		ac := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, fmt.Sprint(other)
		cfg := kmsg.NewAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = leaderRateKey, kmsg.StringPtr("1")
		rr.Configs = append(rr.Configs, cfg)
		ac.Resources = append(ac.Resources, rr)
		ar, err := ac.RequestWith(ctx, cl.Broker(int(via)))
		if err != nil || len(ar.Resources) != 1 {
			t.Fatalf("AlterConfigs through %d: %v %+v", via, err, ar)
		}
		wantRefusal("AlterConfigs", via, other, ar.Resources[0].ErrorCode, ar.Resources[0].ErrorMessage)
	}
	// Nothing refused was applied: each broker holds the value it set on
	// itself, not its neighbour's nor AlterConfigs' "1".
	for b := int32(1); b <= 3; b++ {
		requireBrokerConfig(ctx, t, adm, b, leaderRateKey, fmt.Sprint(1048576*int(b)), kmsg.ConfigSourceDynamicBrokerConfig)
	}

	// On a controller listener (kafka-configs --bootstrap-controller) any
	// broker's resource is the controllers' to alter, as in Kafka.
	var ctrlAddr string
	for _, l := range strings.Split(c.props[0]["listeners"], ",") {
		if a, ok := strings.CutPrefix(l, "CONTROLLER://"); ok {
			ctrlAddr = a
		}
	}
	ctrl, err := kgo.NewClient(kgo.SeedBrokers(ctrlAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "2"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = leaderRateKey, kmsg.StringPtr("7340032")
	rr.Configs = append(rr.Configs, cfg)
	iac.Resources = append(iac.Resources, rr)
	ir, err := iac.RequestWith(ctx, ctrl.SeedBrokers()[0])
	if err != nil || len(ir.Resources) != 1 || ir.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter broker 2 through node 1's controller listener: %v %+v", err, ir)
	}
	requireBrokerConfig(ctx, t, adm, 2, leaderRateKey, "7340032", kmsg.ConfigSourceDynamicBrokerConfig)
}
