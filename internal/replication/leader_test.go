package replication

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

func validInputs() (Config, State, LocalLog) {
	return Config{LocalID: 1, ReplicaLagTimeMaxMs: 30000, MinInsyncReplicas: 2},
		State{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1},
		LocalLog{LogEndOffset: 10, DurableEnd: 10, HighWatermark: 5, EpochStartOffset: 10}
}

func TestNewLeaderRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Config, *State, *LocalLog)
		wantErr string
	}{
		{"negative local id", func(c *Config, _ *State, _ *LocalLog) { c.LocalID = -1 }, "negative"},
		{"zero lag", func(c *Config, _ *State, _ *LocalLog) { c.ReplicaLagTimeMaxMs = 0 }, "replica.lag.time.max.ms"},
		{"huge lag", func(c *Config, _ *State, _ *LocalLog) { c.ReplicaLagTimeMaxMs = MaxReplicaLagTimeMs + 1 }, "replica.lag.time.max.ms"},
		{"zero min isr", func(c *Config, _ *State, _ *LocalLog) { c.MinInsyncReplicas = 0 }, "min.insync.replicas"},
		{"no replicas", func(_ *Config, s *State, _ *LocalLog) { s.Replicas, s.ISR = nil, nil }, "replicas"},
		{"too many replicas", func(_ *Config, s *State, _ *LocalLog) {
			s.Replicas = make([]int32, metadata.MaxReplicas+1)
			for i := range s.Replicas {
				s.Replicas[i] = int32(i)
			}
		}, "replicas"},
		{"duplicate replica", func(_ *Config, s *State, _ *LocalLog) { s.Replicas = []int32{1, 2, 2} }, "twice"},
		{"duplicate isr member", func(_ *Config, s *State, _ *LocalLog) { s.ISR = []int32{1, 1} }, "twice"},
		{"isr member not a replica", func(_ *Config, s *State, _ *LocalLog) { s.ISR = []int32{1, 4} }, "not a replica"},
		{"another leader", func(_ *Config, s *State, _ *LocalLog) { s.Leader = 2 }, "not this broker"},
		{"leaderless", func(_ *Config, s *State, _ *LocalLog) { s.Leader = metadata.NoLeader }, "not this broker"},
		{"leader outside isr", func(_ *Config, s *State, _ *LocalLog) { s.ISR = []int32{2, 3} }, "not in its isr"},
		{"negative epoch", func(_ *Config, s *State, _ *LocalLog) { s.LeaderEpoch = -1 }, "negative epoch"},
		{"negative log end", func(_ *Config, _ *State, l *LocalLog) { l.LogEndOffset = -1 }, "log end"},
		{"durable past log end", func(_ *Config, _ *State, l *LocalLog) { l.DurableEnd = 11 }, "durable end"},
		{"hw past log end", func(_ *Config, _ *State, l *LocalLog) { l.HighWatermark = 11 }, "high watermark"},
		{"epoch start past log end", func(_ *Config, _ *State, l *LocalLog) { l.EpochStartOffset = 11 }, "epoch start"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, st, log := validInputs()
			tc.change(&cfg, &st, &log)
			l, err := NewLeader(cfg, st, log, 0)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, %v; want error containing %q", l, err, tc.wantErr)
			}
		})
	}
	cfg, st, log := validInputs()
	if _, err := NewLeader(cfg, st, log, 0); err != nil {
		t.Fatalf("valid input refused: %v", err)
	}
}

// The Leader must not share slices with its caller: the node keeps metadata
// images immutable and hands proposals to another goroutine.
func TestLeaderCopiesSlices(t *testing.T) {
	cfg, st, log := validInputs()
	l, err := NewLeader(cfg, st, log, 0)
	if err != nil {
		t.Fatal(err)
	}
	st.ISR[1], st.Replicas[1] = 9, 9
	if got := l.ISR(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("isr changed through the caller's slice: %v", got)
	}
	l.ISR()[0] = 9
	l.State().Replicas[0] = 9
	l.Snapshot().ISR[0] = 9
	if _, err := l.OnFollowerFetch(2, 10, 40000); err != nil {
		t.Fatal(err)
	}
	p := l.Tick(40000, nil) // 3 never fetched: shrink to 1,2
	if p == nil || !slices.Equal(p.NewISR, []int32{1, 2}) {
		t.Fatalf("want a shrink to [1 2], got %+v", p)
	}
	p.NewISR[0] = 9
	pending, ok := l.Pending()
	if !ok || !slices.Equal(pending.NewISR, []int32{1, 2}) {
		t.Fatalf("pending changed through the returned proposal: %+v", pending)
	}
	pending.NewISR[0] = 9
	if snap := l.Snapshot(); !slices.Equal(snap.Pending.NewISR, []int32{1, 2}) || !slices.Equal(snap.ISR, []int32{1, 2, 3}) {
		t.Fatalf("state changed through returned slices: %+v", snap)
	}
}

func TestRejectionOfAnOlderProposalIsIgnored(t *testing.T) {
	cfg, st, log := validInputs()
	l, err := NewLeader(cfg, st, log, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := l.Tick(40000, nil)
	if p == nil {
		t.Fatal("want a shrink proposal")
	}
	old := *p
	old.PartitionEpoch--
	l.OnISRChangeRejected(old, kerr.IneligibleReplica)
	if _, ok := l.Pending(); !ok {
		t.Fatal("a rejection of another proposal cleared the pending one")
	}
	l.OnISRChangeRejected(*p, kerr.IneligibleReplica)
	if _, ok := l.Pending(); ok {
		t.Fatal("the rejection did not clear the pending proposal")
	}
}

func TestErrorsCarryKafkaCodes(t *testing.T) {
	cfg, st, log := validInputs()
	st.ISR = []int32{1}
	l, err := NewLeader(cfg, st, log, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CheckAcksAll(); !errors.Is(err, ErrNotEnoughReplicas) || !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("CheckAcksAll: %v", err)
	}
	if done, err := l.AckReady(10); !done || !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("AckReady: %v %v", done, err)
	}
	st.LeaderEpoch++
	if _, err := l.OnISRCommitted(st, 0); !errors.Is(err, ErrLeaderChanged) {
		t.Fatalf("OnISRCommitted with a new leader epoch: %v", err)
	}
}

func TestStateOf(t *testing.T) {
	p := metadata.Partition{Index: 3, Replicas: []int32{1, 2}, ISR: []int32{2}, ELR: []int32{1}, Leader: 2, LeaderEpoch: 4, PartitionEpoch: 6}
	got := StateOf(p)
	want := State{Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 4, PartitionEpoch: 6}
	if !slices.Equal(got.Replicas, want.Replicas) || !slices.Equal(got.ISR, want.ISR) ||
		got.Leader != want.Leader || got.LeaderEpoch != want.LeaderEpoch || got.PartitionEpoch != want.PartitionEpoch {
		t.Fatalf("StateOf = %+v, want %+v", got, want)
	}
	got.ISR[0] = 9
	if p.ISR[0] != 2 {
		t.Fatal("StateOf shares the ISR slice with the metadata image")
	}
}

func TestCheckLeaderEpoch(t *testing.T) {
	tests := []struct {
		requested, current int32
		want               error
	}{
		{UndefinedEpoch, 5, nil},
		{5, 5, nil},
		{4, 5, kerr.FencedLeaderEpoch},
		{6, 5, kerr.UnknownLeaderEpoch},
	}
	for _, tc := range tests {
		err := CheckLeaderEpoch(tc.requested, tc.current)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("CheckLeaderEpoch(%d, %d) = %v, want %v", tc.requested, tc.current, err, tc.want)
		}
	}
}
