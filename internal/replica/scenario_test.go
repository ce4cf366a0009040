package replica

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/invariant"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/producer"
	"github.com/skein-log/skein/internal/replication"
	"github.com/skein-log/skein/internal/scenariotest"
	"github.com/skein-log/skein/internal/vfs"
)

// TestScenarios runs the golden scenario files in testdata/ against one
// replica core on an in-memory disk. Each line is a command; '#' starts a
// comment. Commands (t=MS is the event's time):
//
//	open [dir=t-0] [local=1] [lag=MS] [min-isr=N] [max-producers=N] [write-caching] [flush-messages=N]
//	     [flush-ms=MS] [timestamp=LogAppendTime]   open (or reopen) the replica
//	apply role=leader|follower|none leader=ID epoch=E pepoch=P replicas=1,2,3 isr=1,2 t=T
//	produce name=X acks=-1|0|1 records=N [pid=P seq=S [pepoch=E] [txn]] [timeout=MS] t=T
//	marker name=X pid=P [pepoch=E] [coord=C] commit|abort t=T   WriteTxnMarker
//	sync                         run the queued fsync and report it
//	syncfail                     the queued fsync fails (EIO)
//	syncstart, syncreport        run the queued fsync now, report it later
//	flushtimer                   the flush.ms timer fires
//	expire name=X                X's request timeout fires
//	fetch id=ID offset=N t=T     follower ID fetches from N (OnFollowerFetch)
//	tick t=T                     Tick
//	isranswer [err=NAME]         one send of the last proposal ended so
//	resend                       the last armed resend timer fires (ResendISR)
//	controller                   a new controller is active (ControllerChanged)
//	follow epoch=E records=N leaderhw=H [pid=P seq=S txn | marker=commit|abort pid=P] t=T
//	                             append a batch from the leader at the log
//	                             end, fsync, FollowerSynced
//	     [closesync]             (closesync: the replica closes before the fsync)
//	truncate offset=N            TruncateTo
//	close                        Close, then close the log (a replica removed)
//	diskfull, diskfree           the disk has no room left, has room again
//	offline                      SetOffline (the log directory failed)
//	crash                        the disk keeps only what was fsynced
//	read offset=N [replica|committed]  Read; `got` checks what it returned
//	                             (`aborted` the aborted transactions)
//	expect key=value ...         check (keys in checkExpect)
//
// A command with the word `fails` must return an error; any other must not.
// The Ready of the last command is what sync=, wake=, flush=, proposal=,
// resend=, diskfailed=, violations= check; answers accumulate by name.
func TestScenarios(t *testing.T) {
	scenariotest.Files(t, runScenario)
}

type scenario struct {
	fs      *vfs.Mem
	r       *Replica
	cfg     config.TopicConfig
	opts    Options
	rd      Ready
	answers map[string]string // name -> pending, ok@BASE or an error name
	ids     map[WaiterID]string
	pending bool // a fsync was asked for and not yet run
	change  *replication.ISRChange
	read    string
	aborted string // the last read's aborted transactions
	// lastResend is the resend timer armed last (resend fires it).
	lastResend *ISRResend
	// syncDurable and syncErr are an fsync's result held for syncreport.
	syncDurable int64
	syncErr     error
	// guards are the transaction verifications begun (verify), by name.
	guards map[string]uint64
}

func runScenario(t *testing.T, file string) {
	s := &scenario{fs: vfs.NewMem(), answers: map[string]string{}, ids: map[WaiterID]string{}, guards: map[string]uint64{}}
	scenariotest.Lines(t, file, func(lineNo int, line, _ string) {
		fields := strings.Fields(line)
		kv := map[string]string{}
		for _, a := range fields[1:] {
			k, v, _ := strings.Cut(a, "=")
			kv[k] = v
		}
		_, wantErr := kv["fails"]
		err := s.run(fields[0], kv)
		switch {
		case wantErr && err == nil:
			t.Fatalf("%s:%d: %s: succeeded, want an error", file, lineNo, line)
		case !wantErr && err != nil:
			t.Fatalf("%s:%d: %s: %v", file, lineNo, line, err)
		}
	})
}

func num(kv map[string]string, key string, def int64) int64 {
	v, ok := kv[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", key, v, err))
	}
	return n
}

func ids(v string) []int32 {
	var out []int32
	for _, f := range strings.Split(v, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			panic(err)
		}
		out = append(out, int32(n))
	}
	return out
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	// The producer table's refusals, by the code the handlers map them to.
	if ke, ok := producer.KafkaError(err); ok {
		return ke.Message
	}
	return "error"
}

func kerrByName(name string) error {
	for code := int16(1); code < 200; code++ {
		if e := kerr.TypedErrorForCode(code); e != nil && e.Message == name {
			return e
		}
	}
	return nil
}

// step records a Ready: the answers it holds, a fsync it queued.
func (s *scenario) step(rd Ready) {
	s.rd = rd
	s.pending = s.pending || rd.Sync
	if rd.Propose != nil {
		s.change = rd.Propose
	}
	if rd.Resend != nil {
		s.lastResend = rd.Resend
	}
	for _, a := range rd.Answers {
		name := s.ids[a.ID]
		if a.Result.Err != nil {
			s.answers[name] = errName(a.Result.Err)
		} else {
			s.answers[name] = "ok@" + strconv.FormatInt(a.Result.BaseOffset, 10)
		}
		if a.Done != nil {
			a.Done(a.Result)
		}
	}
}

func (s *scenario) run(cmd string, kv map[string]string) error {
	now := num(kv, "t", 0)
	switch cmd {
	case "open":
		if s.r != nil {
			s.r.Close()
			s.r.Log().Close()
		}
		cfg, err := config.ResolveTopic(mustBroker(), nil)
		if err != nil {
			return err
		}
		cfg.MinInsyncReplicas = int32(num(kv, "min-isr", 1))
		_, cfg.WriteCaching = kv["write-caching"]
		cfg.FlushMessages = num(kv, "flush-messages", cfg.FlushMessages)
		cfg.FlushMs = num(kv, "flush-ms", cfg.FlushMs)
		if ts, ok := kv["timestamp"]; ok {
			cfg.MessageTimestampType = ts
		}
		s.cfg = cfg
		s.opts = Options{LocalID: int32(num(kv, "local", 1)), ReplicaLagTimeMaxMs: num(kv, "lag", 30000),
			MaxProducers: int(num(kv, "max-producers", 0))}
		dir := "t-0"
		if d, ok := kv["dir"]; ok {
			dir = d
		}
		s.r, err = Open(s.fs, dir, dir, cfg, s.opts)
		s.pending = false
		return err
	case "apply":
		role := map[string]metadata.ReplicaRole{"leader": metadata.RoleLeader, "follower": metadata.RoleFollower, "none": metadata.RoleNone}[kv["role"]]
		st := metadata.Partition{Index: 0, Leader: int32(num(kv, "leader", 1)), LeaderEpoch: int32(num(kv, "epoch", 0)),
			PartitionEpoch: int32(num(kv, "pepoch", 0)), Replicas: ids(kv["replicas"]), ISR: ids(kv["isr"])}
		rd, err := s.r.Apply(st, role, s.cfg, now)
		s.step(rd)
		return err
	case "produce":
		n := int(num(kv, "records", 1))
		values := make([][]byte, n)
		for i := range values {
			values[i] = []byte("v")
		}
		b := testBatch(kv, values, now)
		req := api.ProduceParams{Acks: int16(num(kv, "acks", -1)), Timeout: time.Duration(num(kv, "timeout", 30000)) * time.Millisecond, Batches: [][]byte{b}}
		if g, ok := kv["guard"]; ok {
			// KIP-890 part 1: a verifying leader's append, with the guard
			// of verification g (none: no guard).
			req.VerifyTxn, req.VerificationGuard = true, s.guards[g]
		}
		name := kv["name"]
		s.answers[name] = "pending"
		var logAppendTime int64
		id, rd := s.r.Produce(req, func(res api.ProduceResult) { logAppendTime = res.LogAppendTime }, now)
		s.ids[id] = name
		s.step(rd)
		if _, ok := kv["expect-append-time"]; ok && logAppendTime != now {
			return fmt.Errorf("LogAppendTime %d, want %d", logAppendTime, now)
		}
		return nil
	case "verify":
		// StartTxnVerification: answer need (a guard was handed out,
		// kept under name), open (the producer's transaction is open
		// here) or the error.
		name := kv["name"]
		guard, need, err := s.r.StartTxnVerification(num(kv, "pid", 0), int16(num(kv, "epoch", 0)), kv["tv2"] == "true", now)
		switch {
		case err != nil:
			s.answers[name] = errName(err)
		case need:
			s.answers[name], s.guards[name] = "need", guard
		default:
			s.answers[name] = "open"
		}
		return nil
	case "marker":
		_, commit := kv["commit"]
		name := kv["name"]
		s.answers[name] = "pending"
		id, rd := s.r.WriteTxnMarker(api.TxnMarkerParams{ProducerID: num(kv, "pid", 0), ProducerEpoch: int16(num(kv, "pepoch", 0)),
			CoordinatorEpoch: int32(num(kv, "coord", 0)), Commit: commit, Timeout: 30 * time.Second}, func(api.ProduceResult) {}, now)
		s.ids[id] = name
		s.step(rd)
		return nil
	case "sync", "syncfail":
		if !s.pending {
			return errors.New("no fsync queued")
		}
		s.pending = false
		if cmd == "syncfail" {
			s.step(s.r.Synced(0, errors.New("input/output error")))
			return nil
		}
		d, err := s.r.Log().Sync()
		s.step(s.r.Synced(d, err))
		return nil
	case "syncstart":
		// The fsync runs now; its result is reported by syncreport, after
		// whatever the scenario does in between.
		if !s.pending {
			return errors.New("no fsync queued")
		}
		s.pending = false
		s.syncDurable, s.syncErr = s.r.Log().Sync()
		return nil
	case "syncreport":
		s.step(s.r.Synced(s.syncDurable, s.syncErr))
		return nil
	case "flushtimer":
		s.step(s.r.FlushTimer())
		return nil
	case "expire":
		for id, name := range s.ids {
			if name == kv["name"] {
				s.step(s.r.Expire(id))
				return nil
			}
		}
		return fmt.Errorf("no produce named %q", kv["name"])
	case "fetch":
		rd, err := s.r.OnFollowerFetch(int32(num(kv, "id", 0)), num(kv, "offset", 0), now, nil)
		s.step(rd)
		return err
	case "tick":
		s.step(s.r.Tick(now, nil))
		return nil
	case "isranswer":
		if s.change == nil {
			return errors.New("nothing proposed")
		}
		var cause error = errors.New("request lost")
		if name, ok := kv["err"]; ok {
			if name == "none" {
				cause = nil
			} else if cause = kerrByName(name); cause == nil {
				return fmt.Errorf("unknown error %q", name)
			}
		}
		s.step(s.r.OnISRAnswer(*s.change, cause))
		return nil
	case "resend":
		if s.lastResend == nil {
			return errors.New("no resend asked for")
		}
		s.step(s.r.ResendISR(s.lastResend.Change, s.lastResend.Seq))
		return nil
	case "controller":
		s.step(s.r.ControllerChanged())
		return nil
	case "follow":
		n := int(num(kv, "records", 1))
		values := make([][]byte, n)
		for i := range values {
			values[i] = []byte("f")
		}
		b := testBatch(kv, values, now)
		if m, ok := kv["marker"]; ok {
			b = batch.BuildMarker(num(kv, "pid", 0), int16(num(kv, "pepoch", 0)), batch.Marker{Commit: m == "commit", CoordinatorEpoch: int32(num(kv, "coord", 0))}, now)
		}
		batch.SetBaseOffset(b, s.r.Log().LogEndOffset())
		batch.SetLeaderEpoch(b, int32(num(kv, "epoch", 0)))
		accepted, needSync, rd, appendErr := s.r.AppendFromLeader(b, int32(num(kv, "epoch", 0)), now)
		s.step(rd)
		if !accepted {
			return appendErr
		}
		if _, ok := kv["closesync"]; ok {
			if err := s.close(); err != nil {
				return err
			}
		}
		var durable int64
		var syncErr error
		if needSync {
			durable, syncErr = s.r.Log().Sync()
		}
		rd, err := s.r.FollowerSynced(durable, syncErr, num(kv, "leaderhw", 0))
		s.step(rd)
		return errors.Join(appendErr, err)
	case "truncate":
		rd, err := s.r.TruncateTo(num(kv, "offset", 0))
		s.step(rd)
		return err
	case "close":
		return s.close()
	case "diskfull":
		s.fs.SetCapacity(s.fs.Usage())
		return nil
	case "diskfree":
		s.fs.SetCapacity(-1)
		return nil
	case "offline":
		s.step(s.r.SetOffline(errors.New("log directory failed")))
		return nil
	case "crash":
		s.fs.Crash(vfs.CrashOptions{})
		s.fs.SetCapacity(-1)
		s.r = nil
		return nil
	case "read":
		mode := ReadHighWatermark
		if _, ok := kv["replica"]; ok {
			mode = ReadReplica
		}
		if _, ok := kv["committed"]; ok {
			mode = ReadCommitted
		}
		res, err := s.r.Read(num(kv, "offset", 0), 1<<20, true, mode)
		count := 0
		batch.Split(res.Records, func(b []byte) error {
			h, _ := batch.ParseHeader(b)
			count += int(h.RecordCount)
			return nil
		})
		s.read = fmt.Sprintf("%s/%d", errName(err), count)
		s.aborted = "none"
		if res.AbortedTxns != nil {
			parts := []string{}
			for _, a := range res.AbortedTxns {
				parts = append(parts, fmt.Sprintf("%d:%d", a.ProducerID, a.FirstOffset))
			}
			s.aborted = "[" + strings.Join(parts, ",") + "]"
		}
		return nil
	case "expect":
		return s.expect(kv)
	}
	return fmt.Errorf("unknown command %q", cmd)
}

// testBatch builds a produced (or followed) batch of values: plain, or
// with pid= an idempotent one (seq=, pepoch=), transactional with txn.
func testBatch(kv map[string]string, values [][]byte, now int64) []byte {
	if _, ok := kv["pid"]; !ok {
		return batch.Build(values, now)
	}
	pid, epoch, seq := num(kv, "pid", 0), int16(num(kv, "pepoch", 0)), int32(num(kv, "seq", 0))
	if _, ok := kv["txn"]; ok {
		return batch.BuildTransactional(values, now, pid, epoch, seq)
	}
	return batch.BuildProducer(values, now, pid, epoch, seq)
}

func mustBroker() *config.Broker {
	b, err := config.NewBroker(map[string]string{
		"node.id": "1", "process.roles": "broker,controller",
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters": "1@127.0.0.1:1", "log.dirs": "/data", "cluster.id": "scenario",
	})
	if err != nil {
		panic(err)
	}
	return b
}

// expect keys: hw, leo, durable, leader (true/false), answer@NAME, sync,
// wake, flush (FlushAfterMs), proposal (ISR list or none), resend (ms),
// diskfailed, violations (count), following (LEADER/EPOCH or none), got
// (the last read: error name / record count), failed (true/false), lso,
// ongoing (open transactions), aborted (the last read's aborted
// transactions, PID:FIRST), index (the log's aborted-transaction index,
// PID:FIRST-LAST/LSO).
func (s *scenario) expect(kv map[string]string) error {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var problems []string
	for _, key := range keys {
		want := kv[key]
		name, arg, _ := strings.Cut(key, "@")
		var got string
		switch name {
		case "hw":
			got = strconv.FormatInt(s.r.HighWatermark(), 10)
		case "leo":
			got = strconv.FormatInt(s.r.Log().LogEndOffset(), 10)
		case "durable":
			got = strconv.FormatInt(s.r.DurableEnd(), 10)
		case "leader":
			got = strconv.FormatBool(s.r.IsLeader())
		case "answer":
			got = s.answers[arg]
		case "sync":
			got = strconv.FormatBool(s.rd.Sync)
		case "wake":
			// Who is woken: followers, consumers, both or none.
			got = map[[2]bool]string{{false, false}: "none", {true, false}: "followers",
				{false, true}: "consumers", {true, true}: "all"}[[2]bool{s.rd.WakeFollowers, s.rd.WakeConsumers}]
		case "flush":
			got = strconv.FormatInt(s.rd.FlushAfterMs, 10)
		case "proposal":
			got = "none"
			if s.rd.Propose != nil {
				got = idList(s.rd.Propose.NewISR)
			}
		case "resend":
			got = "0"
			if s.rd.Resend != nil {
				got = strconv.FormatInt(s.rd.Resend.AfterMs, 10)
			}
		case "diskfailed":
			got = strconv.FormatBool(s.rd.DiskFailed != nil)
		case "violations":
			got = strconv.Itoa(len(s.rd.Violations))
		case "failed":
			got = strconv.FormatBool(s.r.Failed() != nil)
		case "following":
			got = "none"
			if l, e, ok := s.r.Following(); ok {
				got = fmt.Sprintf("%d/%d", l, e)
			}
		case "got":
			got = s.read
		case "aborted":
			got = s.aborted
		case "lso":
			got = strconv.FormatInt(s.r.LastStableOffset(), 10)
		case "ongoing":
			got = strconv.Itoa(s.r.OngoingTransactions())
		case "index":
			parts := []string{}
			for _, a := range s.r.Log().AllAbortedTxns() {
				parts = append(parts, fmt.Sprintf("%d:%d-%d/%d", a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset))
			}
			got = "[" + strings.Join(parts, ",") + "]"
		default:
			return fmt.Errorf("unknown key %q", key)
		}
		if got != want {
			problems = append(problems, fmt.Sprintf("%s: got %s, want %s", key, got, want))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func idList(l []int32) string {
	parts := make([]string, len(l))
	for i, id := range l {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}

func invariantPanics() bool { return invariant.Panics }

// close stops the replica as the broker does when its image drops it:
// the core first, then its log.
func (s *scenario) close() error {
	s.step(s.r.Close())
	if err := s.r.Log().Close(); err != nil {
		return fmt.Errorf("close the log: %w", err)
	}
	return nil
}
