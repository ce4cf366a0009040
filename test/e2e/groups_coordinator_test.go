package e2e

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/group"
)

// produceNumbered writes n records with values "0".."n-1" round-robin over
// the topic's partitions and waits for all of them (acks=all).
func produceValues(ctx context.Context, t testing.TB, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// TestGroupSingleBrokerCommitAndResume: on one broker (the Kafka default
// offsets.topic.replication.factor of 3 cannot be met and is capped at the
// node count), a franz-go group member consumes, commits, and a new member
// of the same group resumes after the committed offsets; kadm sees the
// group and its offsets.
func TestGroupSingleBrokerCommitAndResume(t *testing.T) {
	tb := startBroker(t, withProp("group.initial.rebalance.delay.ms", "0"))
	ctx := testContext(t, 45*time.Second)
	const topic, groupID = "orders", "billing"
	tb.createTopic(topic, 3, nil)
	produceValues(ctx, t, tb.client(), topic, 0, 30)

	first := tb.client(kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := pollValues(ctx, t, first, 30)
	if len(seen) != 30 {
		t.Fatalf("first member saw %d distinct records, want 30", len(seen))
	}
	if err := first.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	first.Close()

	adm := kadm.NewClient(tb.client())
	offsets, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	var committed int64
	offsets.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Errorf("offset %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		committed += o.At
	})
	if committed != 30 {
		t.Fatalf("committed offsets sum to %d, want 30", committed)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("list groups: %v", err)
	}
	if _, ok := listed[groupID]; !ok {
		t.Fatalf("ListGroups does not show %q: %v", groupID, listed.Groups())
	}

	produceValues(ctx, t, tb.client(), topic, 30, 10)
	second := tb.client(kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	resumed := pollValues(ctx, t, second, 10)
	for v := range resumed {
		if n, _ := strconv.Atoi(v); n < 30 {
			t.Fatalf("resumed member got %q, committed before", v)
		}
	}
}

// pollValues polls until want distinct values arrived and returns them
// with their delivery counts.
func pollValues(ctx context.Context, t testing.TB, cl *kgo.Client, want int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for len(seen) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("polled %d of %d records: %v", len(seen), want, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Logf("fetch error %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	return seen
}

// TestGroupAdminOperations drives the admin side with kadm on one broker:
// offsets committed outside any group member ("simple consumer"), unknown
// partitions refused, ListGroups with and without a state filter,
// DescribeGroups of an empty and an unknown group, OffsetDelete,
// DeleteGroups (refused while members are in the group), and committed
// offsets surviving a restart (the coordinator loads them from the log).
func TestGroupAdminOperations(t *testing.T) {
	tb := startBroker(t, withProp("group.initial.rebalance.delay.ms", "0"))
	ctx := testContext(t, 45*time.Second)
	const topic = "inventory"
	tb.createTopic(topic, 2, nil)
	produceValues(ctx, t, tb.client(), topic, 0, 20)
	adm := kadm.NewClient(tb.client())

	var os kadm.Offsets
	os.AddOffset(topic, 0, 5, -1)
	os.AddOffset(topic, 1, 7, -1)
	os.AddOffset("no-such-topic", 0, 1, -1)
	os.AddOffset(topic, 9, 1, -1)
	committed, err := adm.CommitOffsets(ctx, "simple", os)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	for _, want := range []struct {
		topic     string
		partition int32
		err       error
	}{{topic, 0, nil}, {topic, 1, nil}, {"no-such-topic", 0, kerr.UnknownTopicOrPartition}, {topic, 9, kerr.UnknownTopicOrPartition}} {
		got, ok := committed.Lookup(want.topic, want.partition)
		if !ok || !errors.Is(got.Err, want.err) && got.Err != want.err {
			t.Fatalf("commit of %s/%d: %+v, want error %v", want.topic, want.partition, got, want.err)
		}
	}
	if got := committedTotal(ctx, t, adm, "simple"); got != 12 {
		t.Fatalf("committed offsets sum to %d, want 12", got)
	}

	listed, err := adm.ListGroups(ctx)
	if err != nil || listed["simple"].State != "Empty" {
		t.Fatalf("ListGroups: %v %+v", err, listed)
	}
	if stable, err := adm.ListGroups(ctx, "Stable"); err != nil || len(stable) != 0 {
		t.Fatalf("ListGroups(Stable): %v %+v", err, stable)
	}
	described, err := adm.DescribeGroups(ctx, "simple", "nobody")
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if d := described["simple"]; d.Err != nil || d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("simple: %+v", d)
	}
	if d := described["nobody"]; d.Err != nil || d.State != "Dead" {
		t.Fatalf("nobody: %+v", d)
	}

	deleted, err := adm.DeleteOffsets(ctx, "simple", kadm.TopicsSet{topic: {0: {}}})
	if err != nil || deleted[topic][0] != nil {
		t.Fatalf("delete offsets: %v %+v", err, deleted)
	}
	if got := committedTotal(ctx, t, adm, "simple"); got != 7 {
		t.Fatalf("after OffsetDelete the offsets sum to %d, want 7", got)
	}

	// A group with a live member cannot be deleted.
	member := tb.client(kgo.ConsumerGroup("busy"), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pollValues(ctx, t, member, 20)
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit of busy: %v", err)
	}
	resp, err := adm.DeleteGroups(ctx, "busy", "simple")
	if err != nil {
		t.Fatalf("delete groups: %v", err)
	}
	if !errors.Is(resp["busy"].Err, kerr.NonEmptyGroup) || resp["simple"].Err != nil {
		t.Fatalf("delete groups: busy %v, simple %v", resp["busy"].Err, resp["simple"].Err)
	}
	if again, _ := adm.DeleteGroups(ctx, "simple"); !errors.Is(again["simple"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("deleting a deleted group: %v", again["simple"].Err)
	}
	member.Close()

	tb.restart()
	adm = kadm.NewClient(tb.client())
	if got := committedTotal(ctx, t, adm, "busy"); got != 20 {
		t.Fatalf("after a restart busy's offsets sum to %d, want 20", got)
	}
	if got := committedTotal(ctx, t, adm, "simple"); got != 0 {
		t.Fatalf("the deleted group has offsets again after a restart: %d", got)
	}
}

// TestFindCoordinatorRefusals: a transactional id has no coordinator here
// (no transactions), and a group has none while fewer brokers are alive
// than offsets.topic.replication.factor, as in Kafka; once the missing
// broker is back, the offsets topic is created and groups work.
func TestFindCoordinatorRefusals(t *testing.T) {
	c := startCluster(t, 3, groupClusterProps)
	haltAllAtEnd(t, c)
	ctx := testContext(t, 45*time.Second)
	c.kill(2)
	cl := newSeededClient(t, c.addrs()[:1])
	for {
		// Asked of broker 1 directly: the client's own view of the
		// brokers is cached.
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.Broker(1))
		if err == nil && len(md.Brokers) == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("broker 3 never left the metadata: %v", err)
		case <-time.After(externalPollInterval):
		}
	}
	find := func(keyType int8, key string) *kmsg.FindCoordinatorResponseCoordinator {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = keyType, []string{key}
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil || len(resp.Coordinators) != 1 {
			t.Fatalf("find coordinator: %v %+v", err, resp)
		}
		return &resp.Coordinators[0]
	}
	if got := find(1, "tx"); got.ErrorCode != kerr.CoordinatorNotAvailable.Code || got.ErrorMessage == nil {
		t.Fatalf("transactional id: %+v", got)
	}
	if got := find(0, "early"); got.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("with 2 of 3 brokers: %+v", got)
	} else {
		t.Logf("with 2 of 3 brokers: %s", *got.ErrorMessage)
	}
	c.start(2)
	c.waitRegistered()
	for {
		got := find(0, "early")
		if got.ErrorCode == 0 {
			if got.NodeID < 1 || got.NodeID > 3 {
				t.Fatalf("coordinator %d is not a broker", got.NodeID)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no coordinator after the third broker came back: %+v", got)
		case <-time.After(externalPollInterval):
		}
	}
}

// TestGroupCommitRefusedWithoutEnoughReplicas: with min.insync.replicas=3
// and a follower of the group's __consumer_offsets partition down, a
// commit cannot be written with acks=all: it is refused up front with
// COORDINATOR_NOT_AVAILABLE, Kafka's answer for a commit that cannot be
// written (one whose write fails after that check makes the coordinator
// reload from the log, dropping the offset it had taken in memory), the
// earlier commit stays the visible one, and once the follower is back
// commits work again.
func TestGroupCommitRefusedWithoutEnoughReplicas(t *testing.T) {
	c, ctx, adm := startAllInSyncGroupCluster(t)
	const topic, groupID = "payments", "reconcilers"
	createReplicatedTopic(ctx, t, adm, topic, 1, 3, nil)
	commit := func(adm *kadm.Client, offset int64) error {
		var os kadm.Offsets
		os.AddOffset(topic, 0, offset, -1)
		resp, err := adm.CommitOffsets(ctx, groupID, os)
		if err != nil {
			return err
		}
		return resp.Error()
	}
	if err := commit(adm, 5); err != nil {
		t.Fatalf("first commit: %v", err)
	}

	coordinator := groupCoordinator(ctx, t, adm, groupID)
	follower := otherBrokers(3, coordinator)[0]
	c.kill(int(follower) - 1)
	partition := group.PartitionFor(groupID, 10)
	awaitPartition(ctx, t, adm, "__consumer_offsets", partition, "an ISR without the killed follower", func(v partitionView) bool {
		return v.Leader == coordinator && len(v.ISR) == 2
	})
	awaitLeaderISR(ctx, t, c, coordinator, "__consumer_offsets", partition, 2)

	impatient := kadm.NewClient(newSeededClient(t, c.addrs(), kgo.RetryTimeout(2*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })))
	if err := commit(impatient, 9); err == nil {
		t.Fatal("a commit was acknowledged with 2 of 3 replicas in sync and min.insync.replicas=3")
	} else {
		t.Logf("commit with 2 in-sync replicas: %v", err)
	}
	if got := committedTotal(ctx, t, adm, groupID); got != 5 {
		t.Fatalf("after a refused commit the group's offset is %d, want the earlier 5", got)
	}

	c.start(int(follower) - 1)
	restarted := time.Now()
	for {
		err := commit(impatient, 11)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("commits never worked again after the follower returned: %v", err)
		case <-time.After(externalPollInterval):
		}
	}
	t.Logf("commits work again %v after the follower restarted", time.Since(restarted).Round(time.Millisecond))
	if got := committedTotal(ctx, t, adm, groupID); got != 11 {
		t.Fatalf("offset %d after the follower returned, want 11", got)
	}
}

// startAllInSyncGroupCluster starts three brokers with
// min.insync.replicas=3: with one follower down, no acks=all write of the
// coordinator can succeed.
func startAllInSyncGroupCluster(t *testing.T) (*testCluster, context.Context, *kadm.Client) {
	props := map[string]string{"min.insync.replicas": "3"}
	for k, v := range groupClusterProps {
		props[k] = v
	}
	c := startCluster(t, 3, props)
	haltAllAtEnd(t, c)
	return c, testContext(t, 50*time.Second), observerClient(t, c.addrs())
}

// TestGroupSyncWithoutEnoughReplicas: with min.insync.replicas=3 and a
// follower of the group's __consumer_offsets partition down, the leader's
// SyncGroup cannot write the generation's assignment. As in Kafka, the
// sync is answered COORDINATOR_NOT_AVAILABLE and the group, still loaded,
// prepares a rebalance: it never was Stable with an assignment that is not
// in the log. Once the follower is back, the member rejoins and gets its
// assignment.
func TestGroupSyncWithoutEnoughReplicas(t *testing.T) {
	c, ctx, adm := startAllInSyncGroupCluster(t)
	const groupID = "settlers"
	coordinator := groupCoordinator(ctx, t, adm, groupID)
	partition := group.PartitionFor(groupID, 10)
	awaitLeaderISR(ctx, t, c, coordinator, "__consumer_offsets", partition, 3)
	follower := otherBrokers(3, coordinator)[0]
	c.kill(int(follower) - 1)
	awaitLeaderISR(ctx, t, c, coordinator, "__consumer_offsets", partition, 2)

	// Raw requests straight to the coordinator: a client library would
	// retry a coordinator error on its own and hide it.
	broker := newSeededClient(t, c.addrs()).Broker(int(coordinator))
	assignment := kmsg.NewConsumerMemberAssignment()
	assignment.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "ledger", Partitions: []int32{0, 1}}}
	want := assignment.AppendTo(nil)
	memberID, gen := joinAlone(ctx, t, broker, groupID, "")
	if code := syncAlone(ctx, t, broker, groupID, memberID, gen, want).ErrorCode; code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("leader's sync with 2 of 3 replicas in sync: error %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	failedAt := time.Now()
	if state := groupState(ctx, t, adm, groupID); state != "PreparingRebalance" {
		t.Fatalf("after the failed assignment write the group is %s, want PreparingRebalance", state)
	}
	t.Logf("described %v after the failed sync", time.Since(failedAt).Round(time.Millisecond))

	c.start(int(follower) - 1)
	restarted := time.Now()
	awaitLeaderISR(ctx, t, c, coordinator, "__consumer_offsets", partition, 3)
	t.Logf("the follower is in sync again %v after it restarted", time.Since(restarted).Round(time.Millisecond))
	rejoinedID, gen2 := joinAlone(ctx, t, broker, groupID, memberID)
	if rejoinedID != memberID || gen2 != gen+1 {
		t.Fatalf("rejoin: member %s generation %d, want %s generation %d", rejoinedID, gen2, memberID, gen+1)
	}
	resp := syncAlone(ctx, t, broker, groupID, memberID, gen2, want)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil || !bytes.Equal(resp.MemberAssignment, want) {
		t.Fatalf("sync after the follower returned: error %v, assignment %q", err, resp.MemberAssignment)
	}
	if state := groupState(ctx, t, adm, groupID); state != "Stable" {
		t.Fatalf("after a committed assignment the group is %s, want Stable", state)
	}
}

// joinAlone joins a consumer group as its only member (answering
// MEMBER_ID_REQUIRED) and returns the member id and generation.
func joinAlone(ctx context.Context, t testing.TB, broker *kgo.Broker, groupID, memberID string) (string, int32) {
	t.Helper()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"ledger"}
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = groupID, memberID, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 45000, 45000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", meta.AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, broker)
		if err != nil {
			t.Fatalf("join: %v", err)
		}
		switch err := kerr.ErrorForCode(resp.ErrorCode); {
		case errors.Is(err, kerr.MemberIDRequired):
			memberID = resp.MemberID
		case err != nil:
			t.Fatalf("join: %v", err)
		default:
			return resp.MemberID, resp.Generation
		}
	}
}

// syncAlone sends the leader's SyncGroup assigning itself assignment.
func syncAlone(ctx context.Context, t testing.TB, broker *kgo.Broker, groupID, memberID string, gen int32, assignment []byte) *kmsg.SyncGroupResponse {
	t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = groupID, memberID, gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = memberID, assignment
	req.GroupAssignment = append(req.GroupAssignment, a)
	resp, err := req.RequestWith(ctx, broker)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return resp
}

// groupState is the group's state as DescribeGroups answers it. It retries
// while the request fails: the client may still dial a killed broker (to
// find the coordinator) right after the crash.
func groupState(ctx context.Context, t testing.TB, adm *kadm.Client, groupID string) string {
	t.Helper()
	for {
		described, err := adm.DescribeGroups(ctx, groupID)
		if err == nil {
			err = described.Error()
		}
		if err == nil {
			return described[groupID].State
		}
		select {
		case <-ctx.Done():
			t.Fatalf("describe %s: %v", groupID, err)
		case <-time.After(externalPollInterval):
		}
	}
}
