package replicafetch

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/scenariotest"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// TestScenarios runs the golden scenario files in testdata/. Each line is
// a command; '#' starts a comment; `expect TEXT` checks the output of the
// command before it, exactly. Commands:
//
//	config pause=200ms rounds=16        (before any follower)
//	follower p0 [start=N] [batches=EPOCH@BASE+COUNT,...] [hw=N]
//	                                    a followed partition of topic t, on a
//	                                    real storage.Log holding those batches
//	assign p0@EPOCH ...                 Session.Assign
//	next t=MS [hold=p0,.. holdwait=MS]  Session.Next (NextHolding with hold): prints the request
//	                                    (`epochs p0(current=3,epoch=2) ...`,
//	                                    `fetch p0(offset=10,current=3,last=2) ...`)
//	                                    or `wait=DURATION`
//	answer-epochs p0(epoch=E,end=O|err=CODE) ...
//	answer-fetch [session=ID] p0(records=N,epoch=E,hw=H|err=CODE[,lso=L]|diverging=O) ...
//	                                    (session: the leader's fetch session id, KIP-227;
//	                                    a fetch prints `session=ID/EPOCH` and `forget=p1`
//	                                    when it is incremental)
//	answer-error                        no answer came (timeout, broken connection)
//	                                    answers print the Ready (`truncate(p0@3,7)`,
//	                                    `append(p0@3,10..12,hw=12)`, `restart(p0@3,50)`,
//	                                    `backoff`, `violation`; `-` for nothing) and
//	                                    then carry out its actions on the logs
//	fail p0                             p0's next action fails (Session.Failed)
//	state p0                            `epoch=E truncate=BOOL log=START..END`
func TestScenarios(t *testing.T) {
	scenariotest.Files(t, runScenario)
}

// testFollower is a followed partition on a real log.
type testFollower struct {
	name  string
	index int32
	log   *storage.Log
	hw    int64
	fail  bool // its next action fails
}

func (f *testFollower) Log() *storage.Log    { return f.log }
func (f *testFollower) HighWatermark() int64 { return f.hw }

type scenario struct {
	t         *testing.T
	fs        vfs.FS
	cfg       Config
	sess      *Session[*testFollower]
	followers map[string]*testFollower
	byIndex   map[int32]*testFollower
	now       time.Duration
	fetched   map[string]int64 // the fetch offset last requested, per partition
	out       string
}

func runScenario(t *testing.T, file string) {
	s := &scenario{t: t, fs: vfs.NewMem(), followers: map[string]*testFollower{}, byIndex: map[int32]*testFollower{},
		fetched: map[string]int64{},
		cfg:     Config{ReplicaID: 2, MaxWait: 500 * time.Millisecond, MinBytes: 1, MaxBytes: 1 << 20, PartitionMaxBytes: 1 << 20, RefusalPause: 200 * time.Millisecond, MaxTruncationRounds: 16}}
	scenariotest.Lines(t, file, func(lineNo int, line, _ string) {
		cmd, rest, _ := strings.Cut(line, " ")
		if cmd == "expect" {
			if s.out != rest {
				t.Fatalf("%s:%d: got %q, want %q", file, lineNo, s.out, rest)
			}
			return
		}
		if err := s.run(cmd, strings.Fields(rest)); err != nil {
			t.Fatalf("%s:%d: %s: %v", file, lineNo, line, err)
		}
	})
}

// kv parses "k=v" fields.
func kv(fields []string) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

// parts parses "p0(k=v,k=v)" fields.
func parts(fields []string) ([]string, []map[string]string) {
	var names []string
	var args []map[string]string
	for _, f := range fields {
		name, rest, _ := strings.Cut(f, "(")
		names = append(names, name)
		args = append(args, kv(strings.Split(strings.TrimSuffix(rest, ")"), ",")))
	}
	return names, args
}

func atoi(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("bad number %q", s))
	}
	return n
}

// batchAt is a batch of count records at base in epoch.
func batchAt(epoch int32, base int64, count int) []byte {
	values := make([][]byte, count)
	for i := range values {
		values[i] = []byte(fmt.Sprintf("r%d", base+int64(i)))
	}
	b := batch.Build(values, 0)
	batch.SetBaseOffset(b, base)
	batch.SetLeaderEpoch(b, epoch)
	return b
}

func (s *scenario) follower(name string) (*testFollower, error) {
	f, ok := s.followers[name]
	if !ok {
		return nil, fmt.Errorf("no follower %s", name)
	}
	return f, nil
}

func (s *scenario) run(cmd string, fields []string) error {
	switch cmd {
	case "config":
		a := kv(fields)
		if v, ok := a["pause"]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return err
			}
			s.cfg.RefusalPause = d
		}
		if v, ok := a["rounds"]; ok {
			s.cfg.MaxTruncationRounds = int(atoi(v))
		}
	case "follower":
		name, a := fields[0], kv(fields[1:])
		l, err := storage.Open(s.fs, "/"+name, storage.DefaultConfig(), storage.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		s.t.Cleanup(func() { l.Close() })
		f := &testFollower{name: name, index: int32(atoi(strings.TrimPrefix(name, "p"))), log: l}
		if v, ok := a["start"]; ok {
			if err := l.TruncateFullyAndStartAt(atoi(v)); err != nil {
				return err
			}
		}
		if v := a["batches"]; v != "" {
			for _, spec := range strings.Split(v, ",") {
				epoch, rest, _ := strings.Cut(spec, "@")
				base, count, _ := strings.Cut(rest, "+")
				if _, err := l.AppendReplica(batchAt(int32(atoi(epoch)), atoi(base), int(atoi(count))), 0); err != nil {
					return err
				}
			}
		}
		f.hw = f.log.LogEndOffset()
		if v, ok := a["hw"]; ok {
			f.hw = atoi(v)
		}
		s.followers[name], s.byIndex[f.index] = f, f
	case "assign":
		if s.sess == nil {
			s.sess = New[*testFollower](s.cfg)
		}
		var as []Assignment[*testFollower]
		for _, spec := range fields {
			name, epoch, _ := strings.Cut(spec, "@")
			f, err := s.follower(name)
			if err != nil {
				return err
			}
			as = append(as, Assignment[*testFollower]{P: f, Topic: "t", Partition: f.index, Epoch: int32(atoi(epoch))})
		}
		s.sess.Assign(as)
		s.out = ""
	case "next":
		args := kv(fields)
		s.now = time.Duration(atoi(args["t"])) * time.Millisecond
		if args["hold"] == "" {
			s.out = s.describeStep(s.sess.Next(s.now, "cluster"))
			break
		}
		held := strings.Split(args["hold"], ",")
		hold := func(f *testFollower) bool { return slices.Contains(held, f.name) }
		wait := time.Duration(atoi(args["holdwait"])) * time.Millisecond
		s.out = s.describeStep(s.sess.NextHolding(s.now, "cluster", hold, wait))
	case "answer-epochs":
		resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = "t"
		names, args := parts(fields)
		for i, name := range names {
			f, err := s.follower(name)
			if err != nil {
				return err
			}
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = f.index
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			if e, ok := args[i]["epoch"]; ok {
				rp.LeaderEpoch, rp.EndOffset = int32(atoi(e)), atoi(args[i]["end"])
			}
			if code := args[i]["err"]; code != "" {
				rp.ErrorCode = errorCode(code)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		s.answer(resp, nil)
	case "answer-fetch":
		resp := kmsg.NewPtrFetchResponse()
		if len(fields) > 0 && strings.HasPrefix(fields[0], "session=") {
			resp.SessionID = int32(atoi(strings.TrimPrefix(fields[0], "session=")))
			fields = fields[1:]
		}
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		names, args := parts(fields)
		for i, name := range names {
			f, err := s.follower(name)
			if err != nil {
				return err
			}
			a := args[i]
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = f.index
			if code := a["err"]; code != "" {
				rp.ErrorCode = errorCode(code)
			}
			if v, ok := a["lso"]; ok {
				rp.LogStartOffset = atoi(v)
			}
			if v, ok := a["diverging"]; ok {
				rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = 0, atoi(v)
			}
			if v, ok := a["records"]; ok {
				rp.RecordBatches = batchAt(int32(atoi(a["epoch"])), s.fetched[name], int(atoi(v)))
				rp.HighWatermark = atoi(a["hw"])
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		s.answer(resp, nil)
	case "answer-error":
		s.answer(nil, kerr.RequestTimedOut)
	case "fail":
		f, err := s.follower(fields[0])
		if err != nil {
			return err
		}
		f.fail = true
		s.out = ""
	case "state":
		f, err := s.follower(fields[0])
		if err != nil {
			return err
		}
		epoch, truncate, ok := s.sess.Followed(f)
		if !ok {
			s.out = "not followed"
			break
		}
		s.out = fmt.Sprintf("epoch=%d truncate=%v log=%d..%d", epoch, truncate, f.log.LogStartOffset(), f.log.LogEndOffset())
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	return nil
}

func errorCode(name string) int16 {
	for code := int16(-1); code < 200; code++ {
		if e := kerr.ErrorForCode(code); e != nil && e.(*kerr.Error).Message == name {
			return code
		}
	}
	panic("unknown error " + name)
}

func (s *scenario) describeStep(step Step) string {
	var out []string
	for range step.Violations {
		out = append(out, "violation")
	}
	switch r := step.Request.(type) {
	case nil:
		out = append(out, "wait="+step.Wait.String())
	case *kmsg.OffsetForLeaderEpochRequest:
		out = append(out, "epochs")
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				out = append(out, fmt.Sprintf("p%d(current=%d,epoch=%d)", p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch))
			}
		}
	case *kmsg.FetchRequest:
		out = append(out, "fetch")
		if r.SessionID != 0 {
			out = append(out, fmt.Sprintf("session=%d/%d", r.SessionID, r.SessionEpoch))
		}
		for _, t := range r.ForgottenTopics {
			for _, p := range t.Partitions {
				out = append(out, fmt.Sprintf("forget=p%d", p))
			}
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				s.fetched[s.byIndex[p.Partition].name] = p.FetchOffset
				out = append(out, fmt.Sprintf("p%d(offset=%d,current=%d,last=%d)", p.Partition, p.FetchOffset, p.CurrentLeaderEpoch, p.LastFetchedEpoch))
			}
		}
	}
	return strings.Join(out, " ")
}

// answer hands the answer to the session, prints the Ready and carries
// out its actions as a runtime would.
func (s *scenario) answer(resp kmsg.Response, err error) {
	rd := s.sess.Answer(s.now, resp, err)
	var out []string
	for _, a := range rd.Actions {
		f := a.P
		switch a.Kind {
		case Truncate:
			out = append(out, fmt.Sprintf("truncate(%s@%d,%d)", f.name, a.Epoch, a.Offset))
		case RestartAt:
			out = append(out, fmt.Sprintf("restart(%s@%d,%d)", f.name, a.Epoch, a.Offset))
		case Append:
			h, herr := batch.ParseHeader(a.Batches)
			if herr != nil {
				s.t.Fatal(herr)
			}
			out = append(out, fmt.Sprintf("append(%s@%d,%d..%d,hw=%d)", f.name, a.Epoch, h.BaseOffset, h.LastOffset(), a.LeaderHW))
		}
		if f.fail {
			f.fail = false
			s.sess.Failed(s.now, a)
			continue
		}
		var aerr error
		switch a.Kind {
		case Truncate:
			aerr = f.log.Truncate(a.Offset)
			f.hw = min(f.hw, f.log.LogEndOffset())
		case RestartAt:
			aerr = f.log.TruncateFullyAndStartAt(a.Offset)
			f.hw = a.Offset
		case Append:
			_, aerr = f.log.AppendReplica(a.Batches, 0)
			f.hw = max(f.hw, min(a.LeaderHW, f.log.LogEndOffset()))
		}
		if aerr != nil {
			s.t.Fatalf("carrying out %v: %v", a.Kind, aerr)
		}
	}
	if rd.Backoff {
		out = append(out, "backoff")
	}
	for range rd.Violations {
		out = append(out, "violation")
	}
	for range rd.Warnings {
		out = append(out, "warning")
	}
	if len(out) == 0 {
		out = []string{"-"}
	}
	s.out = strings.Join(slices.Clip(out), " ")
}
