package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/node"
)

// unregister sends UnregisterBroker for id to broker via (so a request to
// a broker that is not the controller is forwarded) and returns the
// answer's message and error.
func unregister(ctx context.Context, t *testing.T, cl *kgo.Client, via, id int32) (msg string, err error) {
	t.Helper()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, cl.Broker(int(via)))
	if err != nil {
		t.Fatalf("UnregisterBroker(%d) via broker %d: %v", id, via, err)
	}
	if resp.ErrorMessage != nil {
		msg = *resp.ErrorMessage
	}
	return msg, kerr.ErrorForCode(resp.ErrorCode)
}

// registeredBrokers lists the registered brokers, fenced ones included
// (DescribeCluster v2, KIP-1073), as the broker cl sends to knows them: the
// broker an admin request went through has applied its outcome.
func registeredBrokers(ctx context.Context, t *testing.T, cl kmsg.Requestor) []int32 {
	t.Helper()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.IncludeFencedBrokers = 2, true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("describe cluster: %v %+v", err, resp)
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids
}

// TestClusterUnregisterBroker sends UnregisterBroker (key 64) as an admin
// tool does, to every broker (the others forward it): an unknown id is
// BROKER_ID_NOT_REGISTERED, a running broker holding a replica is refused
// with INVALID_REQUEST naming the partition, a stopped broker holding
// none is removed. A stopped replica holder can be removed too; its
// partition keeps serving from the other replica, and the broker, when it
// comes back, registers again and rejoins the ISR.
func TestClusterUnregisterBroker(t *testing.T) {
	// Three controllers (1-3) and two broker-only nodes (4, 5), so that
	// stopping the two latter keeps the quorum.
	c := startRolesCluster(t, []string{combinedRoles, combinedRoles, combinedRoles, brokerOnly, brokerOnly}, nil, node.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	cl := newSeededClient(t, c.addrs())
	const topic = "held"
	createReplicatedTopic(ctx, t, adm, topic, 1, 2, nil)
	replicas := []int32{1, 4}
	var move kadm.AlterPartitionAssignmentsReq
	move.Assign(topic, 0, replicas)
	mustReassign(ctx, t, adm, move)
	awaitReplicas(ctx, t, adm, topic, 0, "1,4", func(r []int32) bool { return slices.Equal(r, replicas) })
	awaitNoReassignments(ctx, t, adm, topic)
	spare := int32(5)
	for via := int32(1); via <= 5; via++ {
		if msg, err := unregister(ctx, t, cl, via, 9); err != kerr.BrokerIDNotRegistered {
			t.Fatalf("unknown broker via %d: %v %q", via, err, msg)
		}
		if msg, err := unregister(ctx, t, cl, via, replicas[0]); err != kerr.InvalidRequest || !strings.Contains(msg, topic+"-0") {
			t.Fatalf("running replica holder via %d: %v %q", via, err, msg)
		}
	}

	// The spare broker, stopped, holds nothing: it goes.
	c.kill(int(spare - 1))
	awaitFenced(ctx, t, cl, spare)
	if msg, err := unregister(ctx, t, cl, 2, spare); err != nil {
		t.Fatalf("unregister stopped broker %d: %v %q", spare, err, msg)
	}
	if ids := registeredBrokers(ctx, t, cl.Broker(2)); slices.Contains(ids, spare) {
		t.Fatalf("broker %d still registered: %v", spare, ids)
	}

	// A stopped follower holding a replica goes too; its partition stays
	// led by the other replica.
	follower := int32(4)
	v := awaitPartition(ctx, t, adm, topic, 0, "broker 1 leading", func(v partitionView) bool { return v.Leader == 1 })
	c.kill(int(follower - 1))
	awaitFenced(ctx, t, cl, follower)
	if msg, err := unregister(ctx, t, cl, v.Leader, follower); err != nil {
		t.Fatalf("unregister stopped replica holder %d: %v %q", follower, err, msg)
	}
	awaitPartition(ctx, t, adm, topic, 0, "the other replica leading alone", func(v partitionView) bool {
		return v.Leader != follower && v.Leader >= 0 && slices.Equal(v.ISR, []int32{v.Leader})
	})
	// Back, it registers again and, still a replica, catches up.
	c.start(int(follower - 1))
	awaitPartition(ctx, t, adm, topic, 0, "both replicas in sync", func(v partitionView) bool { return len(v.ISR) == 2 })
}

// awaitFenced waits until Metadata no longer lists broker id (Kafka lists
// unfenced brokers only).
func awaitFenced(ctx context.Context, t *testing.T, cl *kgo.Client, id int32) {
	t.Helper()
	for {
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err == nil && !slices.ContainsFunc(resp.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == id }) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("broker %d never fenced", id)
		case <-time.After(externalPollInterval):
		}
	}
}
