package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestJoinGroupChecksOrder: a JoinGroup without protocols is answered
// as Kafka answers it, the group id and session timeout checked first
// (kafka-go's TestConn join tests send exactly these).
func TestJoinGroupChecksOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := startCluster(t, 1, nil)
	haltAllAtEnd(t, c)
	cl := c.client()
	for _, tc := range []struct {
		group   string
		session int32
		want    *kerr.Error
	}{
		{"", 0, kerr.InvalidGroupID},
		{"join-checks", 0, kerr.InvalidSessionTimeout},
		{"join-checks", 3000, kerr.InvalidSessionTimeout}, // below group.min.session.timeout.ms
		{"join-checks", 10000, kerr.InconsistentGroupProtocol},
	} {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.SessionTimeoutMillis = tc.group, tc.session
		var resp *kmsg.JoinGroupResponse
		var err error
		if tc.group == "" {
			resp, err = req.RequestWith(ctx, cl.Broker(1))
		} else {
			resp, err = req.RequestWith(ctx, cl)
		}
		if err != nil {
			t.Fatalf("join %q: %v", tc.group, err)
		}
		got := kerr.ErrorForCode(resp.ErrorCode)
		if tc.group == "" && got == kerr.NotCoordinator {
			continue // what kafka-go accepts too: no coordinator owns ""
		}
		if got != tc.want {
			t.Errorf("join %q session %d: %v, want %v", tc.group, tc.session, got, tc.want)
		}
	}
}
