package group

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A scenario is a table of steps; each step runs one operation at a time
// and lists, in order, everything the coordinator answered or persisted
// during it, rendered as short strings with member ids replaced by the
// aliases the scenario uses ("a", "b", ...).
type scenario struct {
	name  string
	cfg   func(*Config)
	steps []step
}

type step struct {
	at   int64
	do   op
	want []string
}

type op func(h *harness)

type harness struct {
	t   *testing.T
	c   *Coordinator
	now int64
	// log is what the coordinator wrote, in log order: failover replays it.
	log     []logEntry
	events  []string
	nextReq RequestID
	reqWho  map[RequestID]string
	ids     map[string]string // alias -> member id
	gens    map[string]int32  // alias -> generation of its last successful join
	// hold keeps assignment writes in flight (in writes) until written
	// reports their outcome; otherwise each commits right after its call.
	hold   bool
	writes []AssignmentWrite
}

const testGroup = "g"

func testConfig() Config {
	return Config{
		InitialRebalanceDelayMs: 3000,
		MinSessionTimeoutMs:     6000,
		MaxSessionTimeoutMs:     300000,
		MaxSize:                 10,
		OffsetsRetentionMs:      1000000,
		MaxOffsetMetadataBytes:  16,
	}
}

func runScenarios(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			cfg := testConfig()
			if sc.cfg != nil {
				sc.cfg(&cfg)
			}
			c, err := New(cfg, 7)
			if err != nil {
				t.Fatal(err)
			}
			h := &harness{t: t, c: c, reqWho: map[RequestID]string{}, ids: map[string]string{}, gens: map[string]int32{}}
			for i, st := range sc.steps {
				h.now = st.at
				h.events = nil
				st.do(h)
				if !slices.Equal(h.events, st.want) {
					t.Fatalf("step %d (t=%d):\n got  %q\n want %q", i, st.at, h.events, st.want)
				}
			}
		})
	}
}

func (h *harness) alias(id string) string {
	for a, mid := range h.ids {
		if mid == id {
			return a
		}
	}
	if id == "" {
		return "-"
	}
	return "?" + id
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

// take renders an Output as events, learning member ids on the way.
func (h *harness) take(out Output) {
	for _, j := range out.Joins { // learn every id first: answers name each other
		if r := j.Response; r.Err == nil || errors.Is(r.Err, kerr.MemberIDRequired) {
			h.ids[h.reqWho[j.To]] = r.MemberID
		}
	}
	if len(out.Records) > 0 {
		h.log = append(h.log, logEntry{recs: out.Records, txn: out.Txn})
	}
	for _, r := range out.Records {
		e := h.renderRecord(r)
		if out.Txn != nil {
			e = fmt.Sprintf("txn %d/%d %s", out.Txn.ProducerID, out.Txn.ProducerEpoch, e)
		}
		h.events = append(h.events, e)
	}
	for _, j := range out.Joins {
		who := h.reqWho[j.To]
		delete(h.reqWho, j.To)
		r := j.Response
		if r.Err != nil {
			h.events = append(h.events, fmt.Sprintf("join %s: %s", who, errName(r.Err)))
			continue
		}
		h.gens[who] = r.Generation
		e := fmt.Sprintf("join %s: gen=%d proto=%s leader=%s", who, r.Generation, r.ProtocolName, h.alias(r.LeaderID))
		if len(r.Members) > 0 {
			var ms []string
			for _, m := range r.Members {
				ms = append(ms, h.alias(m.MemberID))
			}
			e += " members=" + strings.Join(ms, ",")
		}
		if r.SkipAssignment {
			e += " skip"
		}
		h.events = append(h.events, e)
	}
	for _, s := range out.Syncs {
		who := h.reqWho[s.To]
		delete(h.reqWho, s.To)
		if s.Response.Err != nil {
			h.events = append(h.events, fmt.Sprintf("sync %s: %s", who, errName(s.Response.Err)))
			continue
		}
		h.events = append(h.events, fmt.Sprintf("sync %s: %q", who, s.Response.Assignment))
	}
	for _, w := range out.AssignmentWrites {
		if h.hold {
			h.writes = append(h.writes, w)
			h.events = append(h.events, "writing"+strings.TrimPrefix(h.renderRecord(w.Record), "record"))
			continue
		}
		h.commitWrite(w)
	}
}

// commitWrite is the runtime seeing an assignment's record committed.
func (h *harness) commitWrite(w AssignmentWrite) {
	h.log = append(h.log, logEntry{recs: []Record{w.Record}})
	h.events = append(h.events, h.renderRecord(w.Record))
	h.take(h.c.AssignmentWritten(h.now, w, nil))
}

// holdWrites keeps the assignment writes of later steps in flight.
func holdWrites() op { return func(h *harness) { h.hold = true } }

// written reports the outcome of the oldest assignment write in flight:
// committed when err is nil, else failed with err (and not in the log).
func written(err error) op {
	return func(h *harness) {
		if len(h.writes) == 0 {
			h.t.Fatal("no assignment write in flight")
		}
		w := h.writes[0]
		h.writes = h.writes[1:]
		if err == nil {
			h.commitWrite(w)
			return
		}
		h.events = append(h.events, "write failed: "+errName(err))
		h.take(h.c.AssignmentWritten(h.now, w, err))
	}
}

func (h *harness) renderRecord(r Record) string {
	switch int16(r.Key[1]) {
	case offsetCommitKeyVersion:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			h.t.Fatal(err)
		}
		if r.Value == nil {
			return fmt.Sprintf("tombstone offset %s %s-%d", k.Group, k.Topic, k.Partition)
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(r.Value); err != nil {
			h.t.Fatal(err)
		}
		return fmt.Sprintf("record offset %s %s-%d=%d", k.Group, k.Topic, k.Partition, v.Offset)
	default:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			h.t.Fatal(err)
		}
		if r.Value == nil {
			return "tombstone group " + k.Group
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			h.t.Fatal(err)
		}
		var ms []string
		for _, m := range v.Members {
			ms = append(ms, fmt.Sprintf("%s=%q", h.alias(m.MemberID), m.Assignment))
		}
		return fmt.Sprintf("record group %s gen=%d members=[%s]", k.Group, v.Generation, strings.Join(ms, " "))
	}
}

// subscription is a consumer protocol member metadata for topics.
func subscription(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

type joinOpt func(*JoinRequest)

func static(instance string) joinOpt { return func(r *JoinRequest) { r.InstanceID = instance } }
func v4(r *JoinRequest)              { r.RequireKnownMemberID = true }
func skipOK(r *JoinRequest)          { r.SupportsSkipAssignment = true }
func sessionMs(ms int32) joinOpt     { return func(r *JoinRequest) { r.SessionTimeoutMs = ms } }
func rebalanceMs(ms int32) joinOpt   { return func(r *JoinRequest) { r.RebalanceTimeoutMs = ms } }
func protos(names ...string) joinOpt {
	return func(r *JoinRequest) {
		r.Protocols = nil
		for _, n := range names {
			r.Protocols = append(r.Protocols, Protocol{Name: n, Metadata: subscription("t")})
		}
	}
}
func topics(ts ...string) joinOpt {
	return func(r *JoinRequest) {
		for i := range r.Protocols {
			r.Protocols[i].Metadata = subscription(ts...)
		}
	}
}
func protocolType(pt string) joinOpt { return func(r *JoinRequest) { r.ProtocolType = pt } }

func join(who string, opts ...joinOpt) op {
	return func(h *harness) {
		h.nextReq++
		req := JoinRequest{
			ID: h.nextReq, GroupID: testGroup, MemberID: h.ids[who], ClientID: "client-" + who, ClientHost: "/127.0.0.1",
			SessionTimeoutMs: 10000, RebalanceTimeoutMs: 20000, ProtocolType: consumerProtocolType,
			Protocols: []Protocol{{Name: "range", Metadata: subscription("t")}},
		}
		for _, o := range opts {
			o(&req)
		}
		h.reqWho[req.ID] = who
		h.take(h.c.Join(h.now, req))
	}
}

// sync sends SyncGroup with the alias's generation; assignments are
// "alias=bytes".
func sync(who string, assignments ...string) op { return syncGen(who, -2, assignments...) }

func syncGen(who string, gen int32, assignments ...string) op {
	return func(h *harness) {
		if gen == -2 {
			gen = h.gens[who]
		}
		h.nextReq++
		req := SyncRequest{ID: h.nextReq, GroupID: testGroup, MemberID: h.ids[who], Generation: gen}
		for _, a := range assignments {
			to, bytes, _ := strings.Cut(a, "=")
			req.Assignments = append(req.Assignments, Assignment{MemberID: h.ids[to], Assignment: []byte(bytes)})
		}
		h.reqWho[req.ID] = who
		h.take(h.c.Sync(h.now, req))
	}
}

func heartbeat(who string) op { return heartbeatAs(who, "", -2) }

func heartbeatAs(who, instance string, gen int32) op {
	return func(h *harness) {
		if gen == -2 {
			gen = h.gens[who]
		}
		err := h.c.Heartbeat(h.now, HeartbeatRequest{GroupID: testGroup, MemberID: h.ids[who], InstanceID: instance, Generation: gen})
		h.events = append(h.events, fmt.Sprintf("heartbeat %s: %s", who, errName(err)))
	}
}

// leave makes members leave; "alias" or "alias@instance" (by instance id
// with the alias's member id) or "@instance" (admin removal by instance).
func leave(members ...string) op {
	return func(h *harness) {
		req := LeaveRequest{GroupID: testGroup}
		for _, m := range members {
			who, instance, _ := strings.Cut(m, "@")
			req.Members = append(req.Members, LeavingMember{MemberID: h.ids[who], InstanceID: instance})
		}
		resp, out := h.c.Leave(h.now, req)
		h.take(out)
		var errs []string
		for _, e := range resp.Members {
			errs = append(errs, errName(e))
		}
		h.events = append(h.events, "leave: "+strings.Join(errs, ","))
	}
}

// tick fires the timers due now; none may be left in the past.
func tick() op {
	return func(h *harness) {
		h.take(h.c.Tick(h.now))
		if d, ok := h.c.NextDeadline(); ok && d <= h.now {
			h.t.Fatalf("after Tick(%d) the next deadline %d is not in the future", h.now, d)
		}
	}
}

// commit commits "topic-partition=offset[/metadata]" as who ("alias" or
// "alias@instance"; "" for a simple consumer) in generation gen (-2: the
// alias's).
func commit(who string, gen int32, offsets ...string) op {
	return func(h *harness) {
		who, instance, _ := strings.Cut(who, "@")
		if gen == -2 {
			gen = h.gens[who]
		}
		req := CommitRequest{GroupID: testGroup, MemberID: h.ids[who], InstanceID: instance, Generation: gen, Offsets: h.parseOffsets(offsets)}
		res, out := h.c.CommitOffsets(h.now, req)
		h.take(out)
		h.events = append(h.events, "commit: "+joinErrs(res))
	}
}

// parseOffsets reads "topic-partition=offset[/metadata]" specs.
func (h *harness) parseOffsets(specs []string) []CommitOffset {
	var out []CommitOffset
	for _, o := range specs {
		var tp TopicPartition
		var off int64
		spec, meta, _ := strings.Cut(o, "/")
		if _, err := fmt.Sscanf(strings.Replace(spec, "-", " ", 1), "%s %d=%d", &tp.Topic, &tp.Partition, &off); err != nil {
			h.t.Fatalf("bad offset spec %q: %v", o, err)
		}
		out = append(out, CommitOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: off, LeaderEpoch: 3, Metadata: meta})
	}
	return out
}

func joinErrs(res []PartitionError) string {
	var errs []string
	for _, r := range res {
		errs = append(errs, errName(r.Err))
	}
	return strings.Join(errs, ",")
}

func fetchAll() op {
	return func(h *harness) {
		var fs []string
		for _, f := range h.c.FetchOffsets(testGroup, nil) {
			fs = append(fs, fmt.Sprintf("%s-%d=%d", f.Topic, f.Partition, f.Offset))
		}
		h.events = append(h.events, "offsets: "+strings.Join(fs, ","))
	}
}

func expire() op { return func(h *harness) { h.take(h.c.ExpireOffsets(h.now)) } }

// describe renders the group's state, generation, leader and members.
func describe() op {
	return func(h *harness) {
		d := h.c.DescribeGroup(testGroup)
		var ms []string
		for _, m := range d.Members {
			ms = append(ms, h.alias(m.MemberID))
		}
		h.events = append(h.events, fmt.Sprintf("%s gen=%d proto=%s leader=%s members=%s",
			d.State, d.Generation, d.Protocol, h.alias(d.Leader), strings.Join(ms, ",")))
	}
}

// failover rebuilds a coordinator from every record written so far and
// checks it describes the same groups and offsets; the scenario continues
// on the rebuilt coordinator, as clients would after a coordinator move.
func failover() op {
	return func(h *harness) {
		liveDesc, rebuiltDesc := map[string]GroupDescription{}, map[string]GroupDescription{}
		liveOffsets, rebuiltOffsets := map[string][]FetchedOffset{}, map[string][]FetchedOffset{}
		for _, l := range h.snapshotListings() {
			liveDesc[l.GroupID], liveOffsets[l.GroupID] = l.desc, l.offsets
		}
		h.take(h.c.Unload())
		rebuilt, err := New(h.c.cfg, 8)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, e := range h.log {
			if err := e.apply(rebuilt, h.now); err != nil {
				h.t.Fatalf("apply: %v", err)
			}
		}
		h.c = rebuilt
		for _, l := range h.snapshotListings() {
			rebuiltDesc[l.GroupID], rebuiltOffsets[l.GroupID] = l.desc, l.offsets
		}
		if !reflect.DeepEqual(liveDesc, rebuiltDesc) || !reflect.DeepEqual(liveOffsets, rebuiltOffsets) {
			h.t.Fatalf("rebuilt state differs:\n live    %+v %+v\n rebuilt %+v %+v", liveDesc, liveOffsets, rebuiltDesc, rebuiltOffsets)
		}
		h.events = append(h.events, "failover")
	}
}

// logEntry is one batch of the partition: the coordinator's records (a
// transactional batch when txn is set), or a producer's marker.
type logEntry struct {
	recs   []Record
	txn    *TxnBatch
	marker *markerEntry
}

type markerEntry struct {
	producerID int64
	epoch      int16
	commit     bool
}

// apply loads e as grouphost's replay does.
func (e logEntry) apply(c *Coordinator, now int64) error {
	switch {
	case e.marker != nil:
		c.ApplyMarker(e.marker.producerID, e.marker.epoch, e.marker.commit)
	case e.txn != nil:
		return c.ApplyTxnBatch(now, *e.txn, e.recs)
	default:
		for _, r := range e.recs {
			if err := c.Apply(now, r); err != nil {
				return err
			}
		}
	}
	return nil
}

type snapshot struct {
	GroupID string
	desc    GroupDescription
	offsets []FetchedOffset
}

func (h *harness) snapshotListings() []snapshot {
	var out []snapshot
	for _, l := range h.c.ListGroups(nil) {
		out = append(out, snapshot{GroupID: l.GroupID, desc: h.c.DescribeGroup(l.GroupID), offsets: h.c.FetchOffsets(l.GroupID, nil)})
	}
	return out
}

// Helpers that cut repetition out of the tables.

// both runs several operations in one step.
func both(ops ...op) op {
	return func(h *harness) {
		for _, o := range ops {
			o(h)
		}
	}
}
