package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
)

// A dynamic controller quorum (KIP-853): the voters are changed with
// AddRaftVoter and RemoveRaftVoter while clients keep producing.

// dynamicQuorumCluster is n combined nodes of a dynamic quorum that node
// 1 founds (testcluster.Dynamic).
func dynamicQuorumCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	c := newRolesCluster(t, testcluster.Combine(n), nil, node.Options{})
	testcluster.Dynamic(c.props)
	return c
}

// addVoterRequest is node i's AddRaftVoter: its id, the directory id its
// first log directory recorded, its controller endpoint.
func (c *testCluster) addVoterRequest(t *testing.T, i int) *kmsg.AddRaftVoterRequest {
	t.Helper()
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.TimeoutMillis = 30_000
	req.VoterID = int32(i + 1)
	req.VoterDirectoryID = c.directoryID(t, i)
	hostPort := testcluster.ControllerAddr(c.props[i])
	host, portText, _ := strings.Cut(hostPort, ":")
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatalf("controller port of node %d: %v", i+1, err)
	}
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(port)
	req.Listeners = []kmsg.AddRaftVoterRequestListener{l}
	return req
}

// directoryID reads node i's directory id from its meta.properties.
func (c *testCluster) directoryID(t *testing.T, i int) [16]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.props[i]["log.dirs"], "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "directory.id="); ok {
			id, err := metadata.ParseTopicID(v)
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
	}
	t.Fatalf("node %d: no directory.id", i+1)
	return [16]byte{}
}

func addVoter(ctx context.Context, t *testing.T, cl *kgo.Client, req *kmsg.AddRaftVoterRequest) error {
	t.Helper()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("AddRaftVoter %d: %v", req.VoterID, err)
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

func removeVoter(ctx context.Context, t *testing.T, cl *kgo.Client, id int32, dir [16]byte) error {
	t.Helper()
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.VoterID, req.VoterDirectoryID = id, dir
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("RemoveRaftVoter %d: %v", id, err)
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// quorumVoters asks DescribeQuorum (v2) for the voters and observers.
func quorumVoters(ctx context.Context, t *testing.T, cl *kgo.Client) (voters, observers []int32, resp *kmsg.DescribeQuorumResponse) {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeQuorum: %v", err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return nil, nil, resp
	}
	for _, v := range p.CurrentVoters {
		voters = append(voters, v.ReplicaID)
	}
	for _, o := range p.Observers {
		observers = append(observers, o.ReplicaID)
	}
	slices.Sort(voters)
	slices.Sort(observers)
	return voters, observers, resp
}

// awaitVoters waits until DescribeQuorum names exactly want as voters,
// with a leader among them (a leader that removed itself hands over once
// the change is committed).
func awaitVoters(ctx context.Context, t *testing.T, cl *kgo.Client, want ...int32) *kmsg.DescribeQuorumResponse {
	t.Helper()
	var last []int32
	for {
		voters, _, resp := quorumVoters(ctx, t, cl)
		if slices.Equal(voters, want) && slices.Contains(want, resp.Topics[0].Partitions[0].LeaderID) {
			return resp
		}
		last = voters
		select {
		case <-ctx.Done():
			t.Fatalf("voters never became %v; last %v", want, last)
		case <-time.After(externalPollInterval):
		}
	}
}

// TestClusterQuorumGrowsAndShrinks: three voters grow to four and shrink
// to three again (the founder, most likely the leader, leaves) while an
// idempotent franz-go producer keeps writing; every acknowledged record is
// read back once, and the membership survives a restart.
func TestClusterQuorumGrowsAndShrinks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := dynamicQuorumCluster(t, 4)
	c.start(0)
	testcluster.WaitRegistered(t, c.brokers[:1])
	for i := 1; i < 4; i++ {
		c.start(i) // not voters yet: they wait to be added
	}
	admin := newSeededClient(t, c.addrs()[:1])
	for i := 1; i < 3; i++ {
		if err := addVoter(ctx, t, admin, c.addVoterRequest(t, i)); err != nil {
			t.Fatalf("add node %d: %v", i+1, err)
		}
	}
	awaitVoters(ctx, t, admin, 1, 2, 3)
	testcluster.WaitRegistered(t, c.brokers[:3])
	if err := addVoter(ctx, t, admin, c.addVoterRequest(t, 1)); !errorIs(err, kerr.DuplicateVoter) {
		t.Fatalf("adding node 2 twice: %v, want DUPLICATE_VOTER", err)
	}

	const topic, partitions = "quorum-change", 3
	createReplicatedTopic(ctx, t, observerClient(t, c.addrs()[:3]), topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})
	acks := newAckedRecords()
	producer := idempotentProducer(t, c.addrs()[:3])
	st := startStream(ctx, producer, topic, spreadOver(partitions), 0, openEnded, acks)
	awaitProgress(ctx, t, acks, 200)

	// Grow to four voters under load.
	began := time.Now()
	if err := addVoter(ctx, t, admin, c.addVoterRequest(t, 3)); err != nil {
		t.Fatalf("add node 4: %v", err)
	}
	t.Logf("AddRaftVoter of node 4 (learner, catch-up, promotion) answered in %v", time.Since(began))
	awaitVoters(ctx, t, admin, 1, 2, 3, 4)
	testcluster.WaitRegistered(t, c.brokers[3:])
	awaitProgress(ctx, t, acks, 200)

	// Shrink to three: node 1 leaves the voters (it stays a broker, and
	// shows among the observers).
	if err := removeVoter(ctx, t, admin, 1, [16]byte{1}); !errorIs(err, kerr.VoterNotFound) {
		t.Fatalf("remove with a wrong directory id: %v, want VOTER_NOT_FOUND", err)
	}
	began = time.Now()
	if err := removeVoter(ctx, t, admin, 1, c.directoryID(t, 0)); err != nil {
		t.Fatalf("remove node 1: %v", err)
	}
	resp := awaitVoters(ctx, t, admin, 2, 3, 4)
	t.Logf("RemoveRaftVoter of node 1 answered, and a new leader among the voters, in %v", time.Since(began))
	if _, observers, _ := quorumVoters(ctx, t, admin); !slices.Contains(observers, 1) {
		t.Fatalf("node 1 is not among the observers %v", observers)
	}
	p := resp.Topics[0].Partitions[0]
	if p.LeaderID == 1 || p.LeaderID < 0 || p.HighWatermark <= 0 {
		t.Fatalf("after the removal: leader %d, high watermark %d", p.LeaderID, p.HighWatermark)
	}
	if len(resp.Nodes) != 3 {
		t.Fatalf("DescribeQuorum v2 lists %d voter nodes, want 3", len(resp.Nodes))
	}
	awaitProgress(ctx, t, acks, 200)
	sent := st.stopAndWait(t)
	if n := acks.failures(); n > 0 {
		_, _, errs := acks.snapshot()
		t.Fatalf("%d of %d records failed: %v", n, sent, errs)
	}
	read := checkAckedRecords(ctx, t, c.addrs(), topic, acks)
	t.Logf("%d records produced and read back across the membership changes", read)

	// The membership is the quorum's state: a restarted voter keeps it.
	c.kill(1)
	c.start(1)
	awaitVoters(ctx, t, admin, 2, 3, 4)
}

// errorIs reports whether err is the Kafka error want.
func errorIs(err error, want *kerr.Error) bool { return errors.Is(err, want) }

// TestClusterStaticQuorumRefusesVoterChanges: controller.quorum.voters is
// Kafka's kraft.version 0; changing it answers UNSUPPORTED_VERSION, and
// DescribeQuorum still describes it.
func TestClusterStaticQuorumRefusesVoterChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startCluster(t, 3, nil)
	cl := newSeededClient(t, c.addrs())
	voters := awaitVoters(ctx, t, cl, 1, 2, 3)
	if n := len(voters.Nodes); n != 3 || len(voters.Nodes[0].Listeners) != 1 {
		t.Fatalf("static voters' nodes %+v", voters.Nodes)
	}
	req := c.addVoterRequest(t, 0)
	req.VoterID = 9
	if err := addVoter(ctx, t, cl, req); !errorIs(err, kerr.UnsupportedVersion) {
		t.Fatalf("AddRaftVoter on a static quorum: %v", err)
	}
	if err := removeVoter(ctx, t, cl, 1, c.directoryID(t, 0)); !errorIs(err, kerr.UnsupportedVersion) {
		t.Fatalf("RemoveRaftVoter on a static quorum: %v", err)
	}
}

// TestClusterDynamicQuorumBrokerOnly: a broker-only node of a dynamic
// quorum finds the controllers through controller.quorum.bootstrap.servers
// alone, follows the metadata log and learns the voters from it, and
// registers; DescribeQuorum lists it as an observer.
func TestClusterDynamicQuorumBrokerOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newRolesCluster(t, []string{controllerOnly, brokerOnly}, nil, node.Options{})
	testcluster.Dynamic(c.props)
	c.start(0)
	c.start(1)
	testcluster.WaitRegistered(t, c.brokers)
	cl := newSeededClient(t, c.addrs())
	createReplicatedTopic(ctx, t, observerClient(t, c.addrs()), "dyn-broker", 1, 1, nil)
	acks := newAckedRecords()
	produceNumbered(ctx, t, idempotentProducer(t, c.addrs()), acks, "dyn-broker", 1, 0, 50)
	checkAckedRecords(ctx, t, c.addrs(), "dyn-broker", acks)
	for {
		voters, observers, _ := quorumVoters(ctx, t, cl)
		if slices.Equal(voters, []int32{1}) && slices.Contains(observers, 2) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("voters %v observers %v, want [1] and 2 observing", voters, observers)
		case <-time.After(externalPollInterval):
		}
	}
}

// TestClusterQuorumReplacesAControllerDisk: a controller's disk dies; the
// operator removes its voter record (id, old directory id), starts it on
// an empty disk and adds it again under its new directory id, while a
// producer keeps writing to the other two.
func TestClusterQuorumReplacesAControllerDisk(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := dynamicQuorumCluster(t, 3)
	c.start(0)
	testcluster.WaitRegistered(t, c.brokers[:1])
	c.start(1)
	c.start(2)
	admin := newSeededClient(t, c.addrs()[:1])
	for i := 1; i < 3; i++ {
		if err := addVoter(ctx, t, admin, c.addVoterRequest(t, i)); err != nil {
			t.Fatalf("add node %d: %v", i+1, err)
		}
	}
	awaitVoters(ctx, t, admin, 1, 2, 3)
	c.waitRegistered()

	const topic, partitions = "disk-replaced", 2
	createReplicatedTopic(ctx, t, observerClient(t, c.addrs()), topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})
	acks := newAckedRecords()
	st := startStream(ctx, idempotentProducer(t, c.addrs()[:2]), topic, spreadOver(partitions), 0, openEnded, acks)
	awaitProgress(ctx, t, acks, 200)

	oldDir := c.directoryID(t, 2)
	c.kill(2)
	if err := os.RemoveAll(c.props[2]["log.dirs"]); err != nil {
		t.Fatal(err)
	}
	if err := removeVoter(ctx, t, admin, 3, oldDir); err != nil {
		t.Fatalf("remove the dead disk's voter: %v", err)
	}
	awaitVoters(ctx, t, admin, 1, 2)
	awaitProgress(ctx, t, acks, 200)

	c.start(2) // an empty disk: a new directory id
	newDir := c.directoryID(t, 2)
	if newDir == oldDir {
		t.Fatal("the new disk kept the old directory id")
	}
	if err := addVoter(ctx, t, admin, c.addVoterRequest(t, 2)); err != nil {
		t.Fatalf("add the new disk: %v", err)
	}
	resp := awaitVoters(ctx, t, admin, 1, 2, 3)
	for _, v := range resp.Topics[0].Partitions[0].CurrentVoters {
		if v.ReplicaID == 3 && v.ReplicaDirectoryID != newDir {
			t.Fatalf("voter 3 has directory id %x, the new disk's is %x", v.ReplicaDirectoryID, newDir)
		}
	}
	testcluster.WaitRegistered(t, c.brokers[2:])
	awaitProgress(ctx, t, acks, 200)
	st.stopAndWait(t)
	if n := acks.failures(); n > 0 {
		_, _, errs := acks.snapshot()
		t.Fatalf("%d records failed: %v", n, errs)
	}
	t.Logf("%d records read back across the disk replacement", checkAckedRecords(ctx, t, c.addrs(), topic, acks))
}

// voterEndpoint is the CONTROLLER endpoint DescribeQuorum v2's Nodes give
// voter id, "" if none.
func voterEndpoint(resp *kmsg.DescribeQuorumResponse, id int32) string {
	for _, n := range resp.Nodes {
		if n.NodeID != id {
			continue
		}
		for _, l := range n.Listeners {
			if l.Name == "CONTROLLER" {
				return net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
			}
		}
	}
	return ""
}

// TestClusterQuorumVoterMovesPort: a voter restarts on another controller
// port (real listeners; nothing listens on the old one any more). It sends
// UpdateRaftVoter to the leader, DescribeQuorum shows the new endpoint,
// and with the first voter gone the other two, one of them restarted so
// that it knows the endpoint from the log alone, elect a leader and commit
// through it, while a producer keeps writing.
func TestClusterQuorumVoterMovesPort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := dynamicQuorumCluster(t, 3)
	c.start(0)
	testcluster.WaitRegistered(t, c.brokers[:1])
	c.start(1)
	c.start(2)
	admin := newSeededClient(t, c.addrs()[:1]) // the others serve nothing until they are voters
	for i := 1; i < 3; i++ {
		if err := addVoter(ctx, t, admin, c.addVoterRequest(t, i)); err != nil {
			t.Fatalf("add node %d: %v", i+1, err)
		}
	}
	resp := awaitVoters(ctx, t, admin, 1, 2, 3)
	c.waitRegistered()
	oldAddr := testcluster.ControllerAddr(c.props[2])
	if got := voterEndpoint(resp, 3); got != oldAddr {
		t.Fatalf("voter 3 at %q, want %q", got, oldAddr)
	}

	const topic, partitions = "voter-moves", 2
	createReplicatedTopic(ctx, t, observerClient(t, c.addrs()), topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})
	acks := newAckedRecords()
	st := startStream(ctx, idempotentProducer(t, c.addrs()), topic, spreadOver(partitions), 0, openEnded, acks)
	awaitProgress(ctx, t, acks, 100)

	// Node 3 comes back on a new controller port.
	c.kill(2)
	newAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	c.props[2]["listeners"] = strings.Replace(c.props[2]["listeners"], "CONTROLLER://"+oldAddr, "CONTROLLER://"+newAddr, 1)
	c.start(2)
	for {
		_, _, resp := quorumVoters(ctx, t, admin)
		if got := voterEndpoint(resp, 3); got == newAddr {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("DescribeQuorum never showed voter 3 at %s", newAddr)
		case <-time.After(externalPollInterval):
		}
	}
	awaitProgress(ctx, t, acks, 100)

	// Node 2 restarts: its transport knows node 3's endpoint from the log
	// only. Then node 1 goes, and nodes 2 and 3 are the majority.
	c.kill(1)
	c.start(1)
	awaitVoters(ctx, t, admin, 1, 2, 3)
	c.kill(0)
	survivors := newSeededClient(t, c.addrs()[1:])
	for {
		_, _, resp := quorumVoters(ctx, t, survivors)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode == 0 && (p.LeaderID == 2 || p.LeaderID == 3) {
			if got := voterEndpoint(resp, 3); got != newAddr {
				t.Fatalf("leader %d shows voter 3 at %q, want %s", p.LeaderID, got, newAddr)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("nodes 2 and 3 never elected a leader")
		case <-time.After(externalPollInterval):
		}
	}
	// A commit now needs both: node 3 is reached at its new port. The
	// topic needs two unfenced brokers, and node 2 restarted moments ago:
	// CreateTopics answers INVALID_REPLICATION_FACTOR until its
	// registration is unfenced, as Kafka's does.
	awaitBrokerList(ctx, t, survivors, []int32{2, 3})
	createReplicatedTopic(ctx, t, observerClient(t, c.addrs()[1:]), "after-the-move", 1, 2, nil)
	awaitProgress(ctx, t, acks, 100)
	sent := st.stopAndWait(t)
	if n := acks.failures(); n > 0 {
		_, _, errs := acks.snapshot()
		t.Fatalf("%d of %d records failed: %v", n, sent, errs)
	}
	t.Logf("%d records read back across the move", checkAckedRecords(ctx, t, c.addrs()[1:], topic, acks))
}

// updateKRaftVersion sends UpdateFeatures for kraft.version (at the
// version the client and broker agree on: v2 answers with the top-level
// error only, v0-1 per feature as well).
func updateKRaftVersion(ctx context.Context, t *testing.T, cl *kgo.Client, level int16, validateOnly bool) error {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis, req.ValidateOnly = 30_000, validateOnly
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "kraft.version", level, 1
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("UpdateFeatures: %v", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}

// finalizedKRaftVersion is kraft.version's finalized level in a node's
// ApiVersions (0 when not listed, as KIP-584 has it).
func finalizedKRaftVersion(ctx context.Context, t *testing.T, addr string) int16 {
	t.Helper()
	cl := newSeededClient(t, []string{addr})
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "skein-e2e", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	supported := false
	for _, f := range resp.SupportedFeatures {
		supported = supported || f.Name == "kraft.version" && f.MinVersion == 0 && f.MaxVersion == 1
	}
	if !supported {
		t.Fatalf("ApiVersions supports features %+v, want kraft.version 0-1", resp.SupportedFeatures)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "kraft.version" {
			return f.MaxVersionLevel
		}
	}
	return 0
}

// TestClusterStaticQuorumUpgradesToDynamic: a running static quorum of
// three controllers (controller.quorum.voters) is upgraded to
// kraft.version 1 with UpdateFeatures while a producer writes, then a
// fourth controller (controller.quorum.bootstrap.servers) is added as a
// voter under that load, and a restarted voter, still configured with the
// static voters, keeps the four. Every acknowledged record is read back.
func TestClusterStaticQuorumUpgradesToDynamic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := newRolesCluster(t, testcluster.Combine(4), nil, node.Options{})
	var boot, voters []string
	for i := range 3 {
		boot = append(boot, testcluster.ControllerAddr(c.props[i]))
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, boot[i]))
	}
	for i := range 3 {
		c.props[i]["controller.quorum.voters"] = strings.Join(voters, ",")
	}
	delete(c.props[3], "controller.quorum.voters")
	c.props[3]["controller.quorum.bootstrap.servers"] = strings.Join(boot, ",")
	for i := range 3 {
		c.start(i)
	}
	testcluster.WaitRegistered(t, c.brokers[:3])
	admin := newSeededClient(t, c.addrs()[:3])
	awaitVoters(ctx, t, admin, 1, 2, 3)
	if v := finalizedKRaftVersion(ctx, t, c.addrs()[0]); v != 0 {
		t.Fatalf("a static quorum's kraft.version is %d", v)
	}
	early := c.addVoterRequest(t, 0)
	early.VoterID = 4
	if err := addVoter(ctx, t, admin, early); !errorIs(err, kerr.UnsupportedVersion) {
		t.Fatalf("AddRaftVoter at kraft.version 0: %v, want UNSUPPORTED_VERSION", err)
	}

	const topic, partitions = "static-upgraded", 3
	createReplicatedTopic(ctx, t, observerClient(t, c.addrs()[:3]), topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})
	acks := newAckedRecords()
	st := startStream(ctx, idempotentProducer(t, c.addrs()[:3]), topic, spreadOver(partitions), 0, openEnded, acks)
	awaitProgress(ctx, t, acks, 200)

	if err := updateKRaftVersion(ctx, t, admin, 2, false); !errorIs(err, kerr.InvalidUpdateVersion) {
		t.Fatalf("kraft.version 2: %v, want INVALID_UPDATE_VERSION", err)
	}
	// The voters send the leader their records within a second of its
	// election; until then the upgrade is refused, and retried.
	for {
		err := updateKRaftVersion(ctx, t, admin, 1, false)
		if err == nil {
			break
		}
		if !errorIs(err, kerr.InvalidUpdateVersion) && !errorIs(err, kerr.RequestTimedOut) {
			t.Fatalf("upgrade: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("upgrade never succeeded: %v", err)
		case <-time.After(externalPollInterval):
		}
	}
	// The leader answered once it applied the upgrade; the others apply
	// it as the entry reaches them.
	for i := range 3 {
		for finalizedKRaftVersion(ctx, t, c.addrs()[i]) != 1 {
			select {
			case <-ctx.Done():
				t.Fatalf("node %d never finalized kraft.version 1 after the upgrade", i+1)
			case <-time.After(externalPollInterval):
			}
		}
	}
	if err := updateKRaftVersion(ctx, t, admin, 0, false); !errorIs(err, kerr.InvalidUpdateVersion) {
		t.Fatalf("downgrade: %v, want INVALID_UPDATE_VERSION", err)
	}
	_, _, resp := quorumVoters(ctx, t, admin)
	for _, v := range resp.Topics[0].Partitions[0].CurrentVoters {
		if want := c.directoryID(t, int(v.ReplicaID-1)); v.ReplicaDirectoryID != want {
			t.Fatalf("voter %d has directory id %x, its disk's is %x", v.ReplicaID, v.ReplicaDirectoryID, want)
		}
	}
	awaitProgress(ctx, t, acks, 200)

	// A fourth controller joins under load.
	c.start(3)
	began := time.Now()
	if err := addVoter(ctx, t, admin, c.addVoterRequest(t, 3)); err != nil {
		t.Fatalf("add node 4 after the upgrade: %v", err)
	}
	t.Logf("AddRaftVoter of node 4 after the upgrade answered in %v", time.Since(began))
	awaitVoters(ctx, t, admin, 1, 2, 3, 4)
	testcluster.WaitRegistered(t, c.brokers[3:])
	awaitProgress(ctx, t, acks, 200)

	// A voter restarted with its static configuration keeps the four.
	c.kill(0)
	c.start(0)
	awaitVoters(ctx, t, newSeededClient(t, c.addrs()[1:]), 1, 2, 3, 4)
	awaitProgress(ctx, t, acks, 200)
	sent := st.stopAndWait(t)
	if n := acks.failures(); n > 0 {
		_, _, errs := acks.snapshot()
		t.Fatalf("%d of %d records failed: %v", n, sent, errs)
	}
	t.Logf("%d records read back across the upgrade and the new voter", checkAckedRecords(ctx, t, c.addrs(), topic, acks))
}
