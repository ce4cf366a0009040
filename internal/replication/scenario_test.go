package replication

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/scenariotest"
)

// TestScenarios runs the golden scenario files in testdata/. Each line is a
// command; '#' starts a comment. Commands:
//
//	leader local=1 lag=30000 min-isr=2 replicas=1,2,3 isr=1,2,3 leader-epoch=5
//	       partition-epoch=7 leo=10 durable=10 hw=8 [epoch-start=10] t=0 [freeze]
//	       [resend-min=MS resend-max=MS]
//	append LEO                    the leader's log now ends at LEO
//	durable OFFSET                the leader fsynced up to OFFSET
//	fetch ID offset=N t=T         follower ID fetched at its durable end N
//	tick t=T [ineligible=3,4]     Tick; the result is what `proposal` checks
//	commit isr=1,2 partition-epoch=8 t=T [leader=1 leader-epoch=5 replicas=1,2,3]
//	reject [err=CODE_NAME]        the controller refused the pending proposal
//	answer [err=CODE_NAME]        one send of the pending proposal failed so
//	                              (OnISRAnswer); `resend` checks the delay
//	expect key=value ...          check state (keys in checkExpect)
//
// A command followed by `!error` (or `!error=some text`) must fail with an
// error containing the text; any other command must succeed. After every command the invariants of
// checkInvariants hold.
func TestScenarios(t *testing.T) {
	scenariotest.Files(t, runScenario)
}

type scenario struct {
	l        *Leader
	cfg      Config
	proposal *ISRChange // last Tick result
	advanced bool       // last hwAdvanced result
	resend   int64      // last OnISRAnswer resend delay
	lastHW   int64
}

func runScenario(t *testing.T, file string) {
	s := &scenario{}
	scenariotest.Lines(t, file, func(lineNo int, line, raw string) {
		wantErr, errSub := false, ""
		if i := strings.Index(line, "!error"); i >= 0 {
			wantErr, errSub = true, strings.TrimPrefix(strings.TrimSpace(line[i+len("!error"):]), "=")
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return
		}
		args, err := parseArgs(fields[1:])
		if err == nil {
			err = s.run(t, fields[0], args)
		}
		var fail *expectFailure
		switch {
		case errors.As(err, &fail):
			t.Fatalf("%s:%d: %s\n  %v", file, lineNo, raw, err)
		case wantErr && err == nil:
			t.Fatalf("%s:%d: %s: want an error, got none", file, lineNo, raw)
		case wantErr && !strings.Contains(err.Error(), errSub):
			t.Fatalf("%s:%d: %s: error %q does not contain %q", file, lineNo, raw, err, errSub)
		case !wantErr && err != nil:
			t.Fatalf("%s:%d: %s: %v", file, lineNo, raw, err)
		}
		if s.l != nil {
			if err := s.checkInvariants(); err != nil {
				t.Fatalf("%s:%d: %s: invariant broken: %v", file, lineNo, raw, err)
			}
		}
	})
}

type expectFailure struct{ msg string }

func (e *expectFailure) Error() string { return e.msg }

type args struct {
	kv    map[string]string
	flags map[string]bool
	pos   []string
}

func parseArgs(fields []string) (args, error) {
	a := args{kv: map[string]string{}, flags: map[string]bool{}}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			if _, dup := a.kv[k]; dup {
				return a, fmt.Errorf("key %q given twice", k)
			}
			a.kv[k] = v
		} else if _, err := strconv.ParseInt(f, 10, 64); err == nil {
			a.pos = append(a.pos, f)
		} else {
			a.flags[f] = true
		}
	}
	return a, nil
}

func (a args) int(key string) (int64, error) {
	v, ok := a.kv[key]
	if !ok {
		return 0, fmt.Errorf("missing %s=", key)
	}
	return strconv.ParseInt(v, 10, 64)
}

func (a args) intOr(key string, def int64) (int64, error) {
	if _, ok := a.kv[key]; !ok {
		return def, nil
	}
	return a.int(key)
}

func (a args) ids(key string) ([]int32, error) {
	v, ok := a.kv[key]
	if !ok {
		return nil, fmt.Errorf("missing %s=", key)
	}
	return parseIDs(v)
}

func parseIDs(v string) ([]int32, error) {
	if v == "" || v == "none" {
		return []int32{}, nil
	}
	var out []int32
	for _, p := range strings.Split(v, ",") {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return nil, err
		}
		out = append(out, int32(n))
	}
	return out, nil
}

func (a args) onePos() (int64, error) {
	if len(a.pos) != 1 {
		return 0, fmt.Errorf("want one number, got %v", a.pos)
	}
	return strconv.ParseInt(a.pos[0], 10, 64)
}

func (s *scenario) run(t *testing.T, cmd string, a args) error {
	if cmd != "leader" && s.l == nil {
		return errors.New("no leader yet: start with a leader line")
	}
	switch cmd {
	case "leader":
		return s.startLeader(a)
	case "append":
		leo, err := a.onePos()
		if err != nil {
			return err
		}
		return s.l.OnLocalAppend(leo, nil)
	case "durable":
		d, err := a.onePos()
		if err != nil {
			return err
		}
		s.advanced, err = s.l.OnLocalDurable(d)
		return err
	case "fetch":
		id, err := a.onePos()
		if err != nil {
			return err
		}
		off, err := a.int("offset")
		if err != nil {
			return err
		}
		now, err := a.int("t")
		if err != nil {
			return err
		}
		s.advanced, err = s.l.OnFollowerFetch(int32(id), off, now)
		return err
	case "tick":
		now, err := a.int("t")
		if err != nil {
			return err
		}
		var ineligible []int32
		if _, ok := a.kv["ineligible"]; ok {
			if ineligible, err = a.ids("ineligible"); err != nil {
				return err
			}
		}
		s.proposal = s.l.Tick(now, func(id int32) bool { return !slices.Contains(ineligible, id) })
		return nil
	case "commit":
		return s.commit(a)
	case "reject":
		p, ok := s.l.Pending()
		if !ok {
			return errors.New("nothing pending to reject")
		}
		var cause error = errors.New("request lost")
		if name, ok := a.kv["err"]; ok {
			if cause = kerrByName(name); cause == nil {
				return fmt.Errorf("unknown error name %q", name)
			}
		}
		s.advanced = s.l.OnISRChangeRejected(p, cause)
		return nil
	case "answer":
		p, ok := s.l.Pending()
		if !ok {
			return errors.New("nothing pending to answer")
		}
		var cause error = errors.New("request lost")
		if name, ok := a.kv["err"]; ok {
			if cause = kerrByName(name); cause == nil {
				return fmt.Errorf("unknown error name %q", name)
			}
		}
		s.resend, s.advanced = s.l.OnISRAnswer(p, cause)
		return nil
	case "expect":
		return s.checkExpect(a)
	}
	return fmt.Errorf("unknown command %q", cmd)
}

func (s *scenario) startLeader(a args) error {
	var err error
	get := func(key string) int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = a.int(key)
		return v
	}
	cfg := Config{
		LocalID:                        int32(get("local")),
		ReplicaLagTimeMaxMs:            get("lag"),
		MinInsyncReplicas:              int32(get("min-isr")),
		FreezeHighWatermarkUnderMinISR: a.flags["freeze"],
	}
	st := State{Leader: cfg.LocalID, LeaderEpoch: int32(get("leader-epoch")), PartitionEpoch: int32(get("partition-epoch"))}
	log := LocalLog{LogEndOffset: get("leo"), DurableEnd: get("durable"), HighWatermark: get("hw")}
	now := get("t")
	if err != nil {
		return err
	}
	if cfg.ISRResendBackoffMinMs, err = a.intOr("resend-min", 0); err != nil {
		return err
	}
	if cfg.ISRResendBackoffMaxMs, err = a.intOr("resend-max", 0); err != nil {
		return err
	}
	if log.EpochStartOffset, err = a.intOr("epoch-start", log.LogEndOffset); err != nil {
		return err
	}
	if st.Replicas, err = a.ids("replicas"); err != nil {
		return err
	}
	if st.ISR, err = a.ids("isr"); err != nil {
		return err
	}
	l, err := NewLeader(cfg, st, log, now)
	if err != nil {
		return err
	}
	s.l, s.cfg, s.proposal, s.lastHW = l, cfg, nil, l.HighWatermark()
	return nil
}

func (s *scenario) commit(a args) error {
	cur := s.l.State()
	st := State{Replicas: cur.Replicas, Leader: cur.Leader, LeaderEpoch: cur.LeaderEpoch}
	var err error
	if st.ISR, err = a.ids("isr"); err != nil {
		return err
	}
	if _, ok := a.kv["replicas"]; ok {
		if st.Replicas, err = a.ids("replicas"); err != nil {
			return err
		}
	}
	pe, err := a.int("partition-epoch")
	if err != nil {
		return err
	}
	st.PartitionEpoch = int32(pe)
	le, err := a.intOr("leader-epoch", int64(cur.LeaderEpoch))
	if err != nil {
		return err
	}
	st.LeaderEpoch = int32(le)
	leader, err := a.intOr("leader", int64(cur.Leader))
	if err != nil {
		return err
	}
	st.Leader = int32(leader)
	now, err := a.int("t")
	if err != nil {
		return err
	}
	s.advanced, err = s.l.OnISRCommitted(st, now)
	return err
}

func kerrByName(name string) error {
	for code := int16(1); code < 200; code++ {
		if e := kerr.TypedErrorForCode(code); e != nil && e.Message == name {
			return e
		}
	}
	return nil
}

// checkExpect compares each key=value with the leader's state. Keys: hw,
// isr, maximal, pending, proposal (last tick), advanced (last HW result),
// produce (CheckAcksAll), ack@OFFSET (AckReady: wait, ok or an error code
// name), offset@ID and caughtup@ID (follower snapshot).
func (s *scenario) checkExpect(a args) error {
	snap := s.l.Snapshot()
	var problems []string
	check := func(key, got, want string) {
		if got != want {
			problems = append(problems, fmt.Sprintf("%s: got %s, want %s", key, got, want))
		}
	}
	keys := make([]string, 0, len(a.kv))
	for k := range a.kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		want := a.kv[key]
		name, arg, _ := strings.Cut(key, "@")
		switch name {
		case "hw":
			check(key, strconv.FormatInt(snap.HighWatermark, 10), want)
		case "isr":
			check(key, idList(snap.ISR), want)
		case "maximal":
			check(key, idList(snap.MaximalISR), want)
		case "pending":
			check(key, changeString(snap.Pending), want)
		case "proposal":
			check(key, changeString(s.proposal), want)
		case "advanced":
			check(key, strconv.FormatBool(s.advanced), want)
		case "resend":
			check(key, strconv.FormatInt(s.resend, 10), want)
		case "produce":
			check(key, errName(s.l.CheckAcksAll()), want)
		case "ack":
			target, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				return fmt.Errorf("bad key %q: %w", key, err)
			}
			done, err := s.l.AckReady(target)
			got := "wait"
			if done {
				got = errName(err)
			} else if err != nil {
				got = "wait+" + errName(err)
			}
			check(key, got, want)
		case "offset", "caughtup":
			id, err := strconv.ParseInt(arg, 10, 32)
			if err != nil {
				return fmt.Errorf("bad key %q: %w", key, err)
			}
			i := slices.IndexFunc(snap.Followers, func(f FollowerSnapshot) bool { return f.ID == int32(id) })
			if i < 0 {
				problems = append(problems, fmt.Sprintf("%s: no follower %d", key, id))
				continue
			}
			v := snap.Followers[i].Offset
			if name == "caughtup" {
				v = snap.Followers[i].LastCaughtUpMs
			}
			check(key, strconv.FormatInt(v, 10), want)
		default:
			return fmt.Errorf("unknown expect key %q", key)
		}
	}
	if len(problems) > 0 {
		return &expectFailure{msg: strings.Join(problems, "\n  ")}
	}
	return nil
}

func idList(ids []int32) string {
	if len(ids) == 0 {
		return "none"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}

func changeString(c *ISRChange) string {
	if c == nil {
		return "none"
	}
	return idList(c.NewISR)
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

// checkInvariants holds after every scenario step: the HW never goes back,
// never passes the durable end of a maximal-ISR member that has reported,
// and the leader is in its ISR and in any proposal.
func (s *scenario) checkInvariants() error {
	snap := s.l.Snapshot()
	if snap.HighWatermark < s.lastHW {
		return fmt.Errorf("high watermark went back from %d to %d", s.lastHW, snap.HighWatermark)
	}
	s.lastHW = snap.HighWatermark
	return checkSnapshot(snap, s.cfg.LocalID, s.proposal)
}
