package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/node"
)

// anonymous is the principal of every PLAINTEXT client connection.
const anonymous = "User:ANONYMOUS"

// startACLCluster starts three brokers with Kafka's authorizer properties,
// no super users and allow.everyone.if.no.acl.found=false, and a dedicated
// REPLICATION inter-broker listener, whose connections are the broker
// principal (docs/security.md): the tests' admin client uses it, as an
// operator would use a super user's credentials.
func startACLCluster(t *testing.T) *testCluster {
	t.Helper()
	c := newRolesCluster(t, []string{combinedRoles, combinedRoles, combinedRoles}, map[string]string{
		"authorizer.class.name":            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found":   "false",
		"inter.broker.listener.name":       "REPLICATION",
		"listener.security.protocol.map":   "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT",
		"offsets.topic.replication.factor": "3",
	}, node.Options{})
	for i := range c.props {
		c.props[i]["listeners"] += fmt.Sprintf(",REPLICATION://127.0.0.1:%d", freePort(t))
	}
	for i := range c.props {
		c.start(i)
	}
	c.waitRegistered()
	return c
}

func replicationAddrs(c *testCluster) []string {
	var out []string
	for _, p := range c.props {
		for _, l := range strings.Split(p["listeners"], ",") {
			if a, ok := strings.CutPrefix(l, "REPLICATION://"); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

func brokerAdmin(t *testing.T, c *testCluster) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(replicationAddrs(c)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// awaitACLs waits until every running broker's image holds n ACLs: an ACL
// change is committed once, then applied by each broker from the log.
func awaitACLs(ctx context.Context, t *testing.T, c *testCluster, n int) {
	t.Helper()
	for {
		ok := true
		for _, b := range c.brokers {
			if b != nil && b.Image().ACLs().Len() != n {
				ok = false
			}
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("brokers did not all reach %d ACLs: %v", n, ctx.Err())
		case <-time.After(externalPollInterval):
		}
	}
}

func mustCreateACLs(ctx context.Context, t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL %+v: %v", r, r.Err)
		}
	}
}

func produceErr(ctx context.Context, cl *kgo.Client, topic string) error {
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

func TestACLsEnforcedForEveryAPIFamily(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startACLCluster(t)
	admin := brokerAdmin(t, c)
	for _, topic := range []string{"acl-open", "acl-secret", "acl-hidden"} {
		if _, err := admin.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	mustCreateACLs(ctx, t, admin, kadm.NewACLs().Allow(anonymous).AllowHosts("*").Topics("acl-open").
		Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	mustCreateACLs(ctx, t, admin, kadm.NewACLs().Allow(anonymous).AllowHosts("*").Groups("ok-").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed))
	// DENY overriding ALLOW: a prefixed ALLOW covers acl-secret, a
	// literal DENY refuses it.
	mustCreateACLs(ctx, t, admin, kadm.NewACLs().Allow(anonymous).AllowHosts("*").Topics("acl-se").
		Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed))
	mustCreateACLs(ctx, t, admin, kadm.NewACLs().Deny(anonymous).DenyHosts("*").Topics("acl-secret").
		Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	const total = 7
	awaitACLs(ctx, t, c, total)

	anon := c.client(kgo.ProducerLinger(0))
	anonAdm := kadm.NewClient(anon)

	// Produce: WRITE on the topic (and an idempotent producer id, granted
	// by WRITE on some topic).
	if err := produceErr(ctx, anon, "acl-open"); err != nil {
		t.Fatalf("produce to an allowed topic: %v", err)
	}
	if err := produceErr(ctx, anon, "acl-secret"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce under DENY: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Metadata: a listing omits what the principal may not DESCRIBE; an
	// existing and a missing topic are refused alike (no leak, no
	// auto-creation).
	listed, err := anonAdm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !listed.Has("acl-open") || listed.Has("acl-hidden") {
		t.Fatalf("listing shows %v", listed.Names())
	}
	mreq := kmsg.NewPtrMetadataRequest()
	for _, n := range []string{"acl-hidden", "acl-ghost"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		mreq.Topics = append(mreq.Topics, rt)
	}
	mreq.AllowAutoTopicCreation = true
	mresp, err := mreq.RequestWith(ctx, anon)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range mresp.Topics {
		if mt.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(mt.Partitions) != 0 {
			t.Fatalf("metadata for %s: code %d, %d partitions", *mt.Topic, mt.ErrorCode, len(mt.Partitions))
		}
	}
	if _, ok := c.brokers[0].Image().Topic("acl-ghost"); ok {
		t.Fatal("a Metadata request without CREATE auto-created a topic")
	}

	// Fetch: READ on the topic for consumers; replicas only for brokers.
	cons := c.client(kgo.ConsumeTopics("acl-secret"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	fs := cons.PollFetches(pctx)
	pcancel()
	if errs := fs.Errors(); len(errs) == 0 || !errors.Is(errs[0].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("consume under DENY: %v", errs)
	}
	freq := kmsg.NewPtrFetchRequest()
	freq.ReplicaID = 2
	freq.ReplicaState.ID = 2 // v15+
	freq.MaxWaitMillis = 10
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "acl-open"
	ft.TopicID = listed["acl-open"].ID // v13+
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	freq.Topics = append(freq.Topics, ft)
	leader := c.leaderOf(ctx, "acl-open", 0)
	fresp, err := freq.RequestWith(ctx, anon.Broker(int(leader)))
	if err != nil {
		t.Fatal(err)
	}
	if len(fresp.Topics) != 1 || fresp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("follower fetch from a client answered %+v", fresp.Topics)
	}

	// Transactions, the partition side: WriteTxnMarkers only from brokers
	// (CLUSTER_ACTION), a transactional produce only with WRITE on its
	// transactional id.
	wreq := kmsg.NewPtrWriteTxnMarkersRequest()
	wm := kmsg.NewWriteTxnMarkersRequestMarker()
	wm.ProducerID, wm.Committed = 1, true
	wmt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	wmt.Topic, wmt.Partitions = "acl-open", []int32{0}
	wm.Topics = append(wm.Topics, wmt)
	wreq.Markers = append(wreq.Markers, wm)
	wresp, err := wreq.RequestWith(ctx, anon.Broker(int(leader)))
	if err != nil {
		t.Fatal(err)
	}
	if code := wresp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("WriteTxnMarkers from a client: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	preq := kmsg.NewPtrProduceRequest()
	preq.TransactionID = kmsg.StringPtr("no-acl")
	preq.Acks = -1
	preq.TimeoutMillis = 5000
	prt := kmsg.NewProduceRequestTopic()
	prt.Topic, prt.TopicID = "acl-open", listed["acl-open"].ID
	prp := kmsg.NewProduceRequestTopicPartition()
	prp.Records = batch.BuildTransactional([][]byte{[]byte("x")}, time.Now().UnixMilli(), 1, 0, 0)
	prt.Partitions = append(prt.Partitions, prp)
	preq.Topics = append(preq.Topics, prt)
	presp, err := preq.RequestWith(ctx, anon.Broker(int(leader)))
	if err != nil {
		t.Fatal(err)
	}
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional produce without WRITE on the transactional id: %v", kerr.ErrorForCode(code))
	}

	// Groups: READ on the group. A consumer group with an allowed name
	// consumes and commits; another name is refused.
	grp := c.client(kgo.ConsumeTopics("acl-open"), kgo.ConsumerGroup("ok-readers"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got == 0; {
		fs := grp.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("group consumer read nothing: %v", fs.Errors())
		}
		got += fs.NumRecords()
	}
	if err := grp.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit in an allowed group: %v", err)
	}
	if _, err := anonAdm.FetchOffsets(ctx, "other-readers"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("offsets of a group without READ: %v", err)
	}
	// A raw commit: kadm leaves out topics it cannot describe.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group = "ok-readers"
	oc.Generation = -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "acl-hidden"
	ocp := kmsg.NewOffsetCommitRequestTopicPartition()
	oct.Partitions = append(oct.Partitions, ocp)
	oc.Topics = append(oc.Topics, oct)
	ocr, err := oc.RequestWith(ctx, anon)
	if err != nil {
		t.Fatal(err)
	}
	if code := ocr.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("commit for a topic without READ: code %d", code)
	}
	dg, err := anonAdm.DescribeGroups(ctx, "other-readers")
	if !errors.Is(err, kerr.GroupAuthorizationFailed) && !errors.Is(dg["other-readers"].Err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("describe a group without DESCRIBE: %v %v", err, dg["other-readers"].Err)
	}

	// The rest of the group and topic APIs, raw, so each code is the
	// broker's own and not a client's reading of it.
	b1 := anon.Broker(1)
	lo := kmsg.NewPtrListOffsetsRequest()
	lot := kmsg.NewListOffsetsRequestTopic()
	lot.Topic = "acl-hidden"
	lot.Partitions = append(lot.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
	lo.Topics = append(lo.Topics, lot)
	if r, err := lo.RequestWith(ctx, b1); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("list offsets without DESCRIBE: %v %+v", err, r)
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "other-readers", "consumer", 10000, 10000
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name = "range"
	jg.Protocols = append(jg.Protocols, jp)
	if r, err := jg.RequestWith(ctx, b1); err != nil || r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("join a group without READ: %v %+v", err, r)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID = "other-readers", "m"
	if r, err := hb.RequestWith(ctx, b1); err != nil || r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("heartbeat without READ: %v %+v", err, r)
	}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID = "other-readers", "m"
	if r, err := sg.RequestWith(ctx, b1); err != nil || r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("sync without READ: %v %+v", err, r)
	}
	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Group = "other-readers"
	lgm := kmsg.NewLeaveGroupRequestMember()
	lgm.MemberID = "m"
	lg.Members = append(lg.Members, lgm)
	if r, err := lg.RequestWith(ctx, b1); err != nil || r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("leave without READ: %v %+v", err, r)
	}
	dgr := kmsg.NewPtrDeleteGroupsRequest()
	dgr.Groups = []string{"ok-readers"}
	if r, err := dgr.RequestWith(ctx, b1); err != nil || r.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("delete a group without DELETE: %v %+v", err, r)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "ok-readers"
	if r, err := od.RequestWith(ctx, b1); err != nil || r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("offset delete without DELETE: %v %+v", err, r)
	}
	lgs, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, b1)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range lgs.Groups {
		if !strings.HasPrefix(g.Group, "ok-") {
			t.Fatalf("ListGroups shows %q, which the principal may not DESCRIBE", g.Group)
		}
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	if r, err := dc.RequestWith(ctx, b1); err != nil || r.ClusterAuthorizedOperations != 0 {
		t.Fatalf("cluster operations of a principal without DESCRIBE on it: %v %+v", err, r)
	}
	mo := kmsg.NewPtrMetadataRequest()
	mot := kmsg.NewMetadataRequestTopic()
	mot.Topic = kmsg.StringPtr("acl-open")
	mo.Topics = append(mo.Topics, mot)
	mo.IncludeTopicAuthorizedOperations = true
	if r, err := mo.RequestWith(ctx, b1); err != nil || r.Topics[0].AuthorizedOperations != 1<<3|1<<4|1<<8 {
		t.Fatalf("topic operations: %v %+v", err, r)
	}

	// Admin APIs.
	ct, err := anonAdm.CreateTopic(ctx, 1, 1, nil, "acl-new")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(ct.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("create topic without CREATE: %v %v", err, ct.Err)
	}
	dt, err := anonAdm.DeleteTopics(ctx, "acl-open")
	if err != nil || !errors.Is(dt["acl-open"].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("delete topic without DELETE: %v %v", err, dt["acl-open"].Err)
	}
	cp, err := anonAdm.CreatePartitions(ctx, 1, "acl-open")
	if err != nil || !errors.Is(cp["acl-open"].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("create partitions without ALTER: %v %v", err, cp["acl-open"].Err)
	}
	rc, err := anonAdm.DescribeTopicConfigs(ctx, "acl-open")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && (len(rc) != 1 || !errors.Is(rc[0].Err, kerr.TopicAuthorizationFailed)) {
		t.Fatalf("describe configs without DESCRIBE_CONFIGS: %v %+v", err, rc)
	}
	ac, err := anonAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}, "acl-open")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && (len(ac) != 1 || !errors.Is(ac[0].Err, kerr.TopicAuthorizationFailed)) {
		t.Fatalf("alter configs without ALTER_CONFIGS: %v %+v", err, ac)
	}
	// Broker loggers: DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster.
	dl := kmsg.NewPtrDescribeConfigsRequest()
	dlr := kmsg.NewDescribeConfigsRequestResource()
	dlr.ResourceType, dlr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
	dl.Resources = append(dl.Resources, dlr)
	if r, err := dl.RequestWith(ctx, anon); err != nil || len(r.Resources) != 1 || r.Resources[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("describe broker loggers without DESCRIBE_CONFIGS on the cluster: %v %+v", err, r)
	}
	al := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alr := kmsg.NewIncrementalAlterConfigsRequestResource()
	alr.ResourceType, alr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
	alc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	alc.Name, alc.Value = "root", kmsg.StringPtr("DEBUG")
	alr.Configs = append(alr.Configs, alc)
	al.Resources = append(al.Resources, alr)
	if r, err := al.RequestWith(ctx, anon); err != nil || len(r.Resources) != 1 || r.Resources[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alter broker loggers without ALTER_CONFIGS on the cluster: %v %+v", err, r)
	}
	set := kadm.TopicsSet{}
	set.Add("acl-open", 0)
	if _, err := anonAdm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("elect leaders without ALTER on the cluster: %v", err)
	}
	var move kadm.AlterPartitionAssignmentsReq
	move.Assign("acl-open", 0, []int32{1})
	if res, err := anonAdm.AlterPartitionAssignments(ctx, move); !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(res["acl-open"][0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("reassign partitions without ALTER on the cluster: %v %+v", err, res)
	}
	if _, err := anonAdm.ListPartitionReassignments(ctx, set); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("list partition reassignments without DESCRIBE on the cluster: %v", err)
	}
	ub := kmsg.NewPtrUnregisterBrokerRequest()
	ub.BrokerID = 1
	if ubr, err := ub.RequestWith(ctx, anon); err != nil || ubr.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("unregister broker without ALTER on the cluster: %v %+v", err, ubr)
	}
	da := kmsg.NewPtrDescribeACLsRequest()
	da.ResourceType, da.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	da.Operation, da.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dar, err := da.RequestWith(ctx, anon)
	if err != nil || dar.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(dar.Resources) != 0 {
		t.Fatalf("describe ACLs without DESCRIBE on the cluster: %v %+v", err, dar)
	}
	cr, err := anonAdm.CreateACLs(ctx, kadm.NewACLs().Allow(anonymous).AllowHosts("*").Topics("acl-hidden").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(cr) != 1 || !errors.Is(cr[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("create ACLs without ALTER on the cluster: %v %+v", err, cr)
	}
	if _, err := anonAdm.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("describe SCRAM users without DESCRIBE on the cluster: %v", err)
	}
	us, err := anonAdm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "eve", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw"}})
	// kgo turns the first user's error into the request's.
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(us["eve"].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alter SCRAM users without ALTER on the cluster: %v %+v", err, us)
	}

	// sarama: a producer is refused the denied topic; its admin lists the
	// ACLs through the broker listener.
	sp, err := sarama.NewSyncProducer(c.addrs(), func() *sarama.Config {
		cfg := saramaConfig()
		cfg.Producer.Return.Successes = true
		cfg.Producer.Retry.Max = 0
		return cfg
	}())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if _, _, err := sp.SendMessage(&sarama.ProducerMessage{Topic: "acl-secret", Value: sarama.StringEncoder("v")}); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("sarama produce under DENY: %v", err)
	}
	if _, _, err := sp.SendMessage(&sarama.ProducerMessage{Topic: "acl-open", Value: sarama.StringEncoder("v")}); err != nil {
		t.Fatalf("sarama produce to an allowed topic: %v", err)
	}
	sadm, err := sarama.NewClusterAdmin(replicationAddrs(c), saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sadm.Close()
	listedACLs, err := sadm.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range listedACLs {
		n += len(r.Acls)
	}
	if n != total {
		t.Fatalf("sarama lists %d ACLs, want %d", n, total)
	}
	anonSadm, err := sarama.NewClusterAdmin(c.addrs(), saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer anonSadm.Close()
	if _, err := anonSadm.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny}); !errors.Is(err, sarama.ErrClusterAuthorizationFailed) {
		t.Fatalf("sarama ListAcls as ANONYMOUS: %v", err)
	}

	// An ACL removal takes effect on an open connection's next request.
	dres, err := admin.DeleteACLs(ctx, kadm.NewACLs().Allow(anonymous).AllowHosts("*").Topics("acl-open").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(dres) != 1 || dres[0].Err != nil || len(dres[0].Deleted) != 1 {
		t.Fatalf("delete the WRITE ACL: %v %+v", err, dres)
	}
	awaitACLs(ctx, t, c, total-1)
	if err := produceErr(ctx, anon, "acl-open"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce after the WRITE ACL was removed: %v", err)
	}
	if metric := scrapeDenials(t, c); metric == 0 {
		t.Fatal("no authorization denial counted")
	}
}

// scrapeDenials sums skein_authorization_denials_total over the brokers.
func scrapeDenials(t *testing.T, c *testCluster) float64 {
	return clusterCounter(t, c, "skein_authorization_denials_total", nil)
}

func TestACLsSurviveControllerFailoverAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := startACLCluster(t)
	admin := brokerAdmin(t, c)
	for _, topic := range []string{"keep-open", "keep-closed"} {
		if _, err := admin.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	mustCreateACLs(ctx, t, admin, kadm.NewACLs().Allow(anonymous).AllowHosts("*").Topics("keep-open").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	awaitACLs(ctx, t, c, 1)

	old := awaitActiveController(ctx, t, c, func(int32) bool { return true })
	c.kill(int(old - 1))
	awaitActiveController(ctx, t, c, func(id int32) bool { return id != old })
	// The new controller decides an ACL change, and the old ones hold.
	mustCreateACLs(ctx, t, admin, kadm.NewACLs().Allow(anonymous).AllowHosts("*").Topics("keep-").
		Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternPrefixed))
	c.start(int(old - 1))
	c.waitRegistered()
	awaitACLs(ctx, t, c, 2)
	check := func(stage string) {
		anon := c.client(kgo.ProducerLinger(0))
		if err := produceErr(ctx, anon, "keep-open"); err != nil {
			t.Fatalf("%s: produce allowed by ACL: %v", stage, err)
		}
		if err := produceErr(ctx, anon, "keep-closed"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("%s: produce without ACL: %v", stage, err)
		}
	}
	check("after failover")
	want := c.brokers[0].Image().ACLs().All()

	for i := range c.brokers {
		c.kill(i)
	}
	for i := range c.props {
		c.start(i)
	}
	c.waitRegistered()
	awaitACLs(ctx, t, c, 2)
	for i, b := range c.brokers {
		got := b.Image().ACLs().All()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("broker %d after restart holds %v, want %v", i+1, got, want)
		}
	}
	check("after a full restart")
}
