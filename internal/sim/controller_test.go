package sim

import (
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Difference 9 of issue 11: the controller-only keys (AlterPartition,
// BrokerRegistration, BrokerHeartbeat, AllocateProducerIds) were answered
// in the simulator by code of its own, because api.ControllerBackend
// blocked. That code never said IsCaughtUp, answered an AlterPartition of
// more than one partition NOT_CONTROLLER and never returned the committed
// partition state. Served through the real handlers, they answer as a
// broker's controller does.
func TestControllerKeysServedByTheAPIHandlers(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 1)
	c := newCluster(Options{Seed: 1, Nodes: 3, Partitions: 2, ReplicationFactor: 3, MinISR: 2, Duration: 5 * time.Second,
		Net: netConfig{MinDelay: 100 * time.Microsecond, MaxDelay: time.Millisecond}})
	for _, id := range c.ids {
		if err := c.nodes[id].start(); err != nil {
			t.Fatal(err)
		}
	}
	c.s.after(100*time.Millisecond, c.ensureTopic)
	c.s.runUntil(3*time.Second, func() bool { return c.stopped })
	ctl := c.activeController()
	if ctl == nil || c.topicID.IsZero() {
		t.Fatal("no active controller or no topic after 3 s")
	}
	tp, _ := ctl.image.TopicByID(c.topicID)
	leader := tp.Partitions[0].Leader
	br, ok := ctl.image.Broker(leader)
	if !ok || tp.Partitions[1].Leader < 0 {
		t.Fatalf("partitions not led: %+v", tp.Partitions)
	}
	const client = clientEndpointBase + 50
	call := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		var got kmsg.Response
		c.call(client, ctl.n.id, req, rpcTimeout, func(r kmsg.Response, err error) {
			if err != nil {
				t.Errorf("%s: %v", kmsg.NameForKey(req.Key()), err)
			}
			got = r
		})
		c.s.runUntil(c.s.now+rpcTimeout+time.Millisecond, func() bool { return got != nil })
		if got == nil {
			t.Fatalf("%s: no answer", kmsg.NameForKey(req.Key()))
		}
		return got
	}

	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.Version = 1
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = leader, br.Epoch, ctl.image.Version()
	r := call(hb).(*kmsg.BrokerHeartbeatResponse)
	if r.ErrorCode != 0 || !r.IsCaughtUp || r.IsFenced {
		t.Fatalf("heartbeat answer %+v, want caught up and unfenced", r)
	}

	// Both partitions in one request, each proposing the ISR it has: a
	// no-op change, answered with the committed state.
	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.Version = 2
	ap.BrokerID, ap.BrokerEpoch = leader, br.Epoch
	at := kmsg.NewAlterPartitionRequestTopic()
	at.TopicID = c.topicID
	for _, p := range tp.Partitions[:2] {
		if p.Leader != leader {
			continue
		}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = p.Index, p.LeaderEpoch, p.PartitionEpoch, p.ISR
		at.Partitions = append(at.Partitions, rp)
	}
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = 7, 0, 0, []int32{leader} // no such partition
	at.Partitions = append(at.Partitions, rp)
	ap.Topics = append(ap.Topics, at)
	ar := call(ap).(*kmsg.AlterPartitionResponse)
	if ar.ErrorCode != 0 || len(ar.Topics) != 1 || len(ar.Topics[0].Partitions) != len(at.Partitions) {
		t.Fatalf("AlterPartition answer %+v", ar)
	}
	for i, sp := range ar.Topics[0].Partitions {
		if i == len(at.Partitions)-1 {
			if sp.ErrorCode == 0 {
				t.Fatalf("AlterPartition of a missing partition answered %+v", sp)
			}
			continue
		}
		want := tp.Partitions[sp.Partition]
		if sp.ErrorCode != 0 || sp.LeaderID != leader || len(sp.ISR) != len(want.ISR) || sp.PartitionEpoch != want.PartitionEpoch {
			t.Fatalf("AlterPartition answer for partition %d: %+v, want the committed state %+v", sp.Partition, sp, want)
		}
	}

	pid := kmsg.NewPtrAllocateProducerIDsRequest()
	pid.BrokerID, pid.BrokerEpoch = leader, br.Epoch
	pr := call(pid).(*kmsg.AllocateProducerIDsResponse)
	if pr.ErrorCode != 0 || pr.ProducerIDLen != pidBlock {
		t.Fatalf("AllocateProducerIds answer %+v", pr)
	}
}
