package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestClientQuotasAuthorized: with ACLs on and none granted, a client may
// neither describe (DESCRIBE_CONFIGS on the cluster) nor alter
// (ALTER_CONFIGS) client quotas, as in Kafka; the brokers' own principal
// may.
func TestClientQuotasAuthorized(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startACLCluster(t)
	anon := kadm.NewClient(c.client())
	entry := []kadm.AlterClientQuotaEntry{{Entity: clientIDEntity("app"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}}}}
	res, err := anon.AlterClientQuotas(ctx, entry)
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alter without ALTER_CONFIGS: %v %+v", err, res)
	}
	if _, err := anon.DescribeClientQuotas(ctx, false, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("describe without DESCRIBE_CONFIGS: %v", err)
	}
	admin := brokerAdmin(t, c)
	if res, err := admin.AlterClientQuotas(ctx, entry); err != nil || res[0].Err != nil {
		t.Fatalf("alter as the brokers' principal: %v %+v", err, res)
	}
}
