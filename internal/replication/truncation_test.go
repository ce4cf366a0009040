package replication

import (
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/storage"
)

// replicaLog is one replica's log as far as truncation cares: its
// leader-epoch cache (the real storage one) and its end and high watermark.
type replicaLog struct {
	epochs []storage.EpochEntry
	logEnd int64
	hw     int64
}

func (r replicaLog) cache(t *testing.T) *storage.EpochCache {
	t.Helper()
	c, err := storage.NewEpochCache(r.epochs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// reconcile runs the follower's OffsetForLeaderEpoch loop against the leader
// until TruncationPoint says it is complete, truncating the follower's log
// and cache after each round as the node would. It returns the final log end
// and the number of rounds.
func reconcile(t *testing.T, follower, leader replicaLog) (int64, int) {
	t.Helper()
	fc, lc := follower.cache(t), leader.cache(t)
	logEnd := follower.logEnd
	for round := 1; round <= 10; round++ {
		requested, ok := fc.Latest()
		if !ok {
			t.Fatalf("round %d: follower has no epoch left to ask for", round)
		}
		le, lo := lc.EndOffsetFor(requested, leader.logEnd)
		local := FollowerLog{
			LogEndOffset:  logEnd,
			HighWatermark: follower.hw,
			EndOffsetFor:  func(e int32) (int32, int64) { return fc.EndOffsetFor(e, logEnd) },
		}
		tr, err := TruncationPoint(local, requested, EpochEndOffset{Epoch: le, EndOffset: lo})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if tr.Offset > logEnd {
			t.Fatalf("round %d: truncation to %d is past the log end %d", round, tr.Offset, logEnd)
		}
		logEnd = tr.Offset
		if err := fc.TruncateFromEnd(logEnd); err != nil {
			t.Fatal(err)
		}
		if tr.Complete {
			return logEnd, round
		}
	}
	t.Fatal("no agreement after 10 rounds")
	return 0, 0
}

func TestTruncationScenarios(t *testing.T) {
	tests := []struct {
		name             string
		follower, leader replicaLog
		wantEnd          int64
		wantRounds       int
	}{
		{
			// KIP-101 scenario 1 (high watermark lag after restart): leader A
			// and follower B both hold m0,m1 (offsets 0,1) of epoch 0, A's HW
			// is 2 (m1 acknowledged) but B's is still 1 when B restarts.
			// Truncating to its HW would drop m1, and if A then died, B would
			// lead without an acknowledged record. By epoch, B asks for the
			// end of epoch 0, A says 2, and B keeps m1.
			name:       "KIP-101 scenario 1: follower keeps records above its HW",
			follower:   replicaLog{epochs: []storage.EpochEntry{{Epoch: 0, StartOffset: 0}}, logEnd: 2, hw: 1},
			leader:     replicaLog{epochs: []storage.EpochEntry{{Epoch: 0, StartOffset: 0}}, logEnd: 2, hw: 2},
			wantEnd:    2,
			wantRounds: 1,
		},
		{
			// Scenario 1, continued the other way: A died, B became leader in
			// epoch 1 at offset 2 and A restarts as follower with HW 1. B's
			// epoch 0 ends at 2, so A keeps m1 too.
			name:       "KIP-101 scenario 1: old leader rejoins the new one",
			follower:   replicaLog{epochs: []storage.EpochEntry{{Epoch: 0, StartOffset: 0}}, logEnd: 2, hw: 1},
			leader:     replicaLog{epochs: []storage.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 2}}, logEnd: 2},
			wantEnd:    2,
			wantRounds: 1,
		},
		{
			// KIP-101 scenario 2 (replica divergence): A (leader, epoch 0)
			// holds m0,m1; B holds only m0. Power fails on both; B restarts
			// first, leads epoch 1 and writes m2 at offset 1. A returns with
			// HW 2: truncating to its HW would keep m1 at offset 1 while B has
			// m2 there, diverged forever. By epoch, B says epoch 0 ends at 1,
			// so A drops m1 (below its own HW: the HW is no floor) and fetches
			// m2.
			name:       "KIP-101 scenario 2: divergent logs",
			follower:   replicaLog{epochs: []storage.EpochEntry{{Epoch: 0, StartOffset: 0}}, logEnd: 2, hw: 2},
			leader:     replicaLog{epochs: []storage.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 1}}, logEnd: 2},
			wantEnd:    1,
			wantRounds: 1,
		},
		{
			// KIP-279 (fast leader fail-over): A (epoch 0) holds m0,m1; B holds
			// m0. A dies; B leads epoch 1 and writes m1' at offset 1; B dies
			// at once and A, still in the ISR, leads epoch 2 and writes m2 at
			// offset 2. B returns and asks for the end of epoch 1, which A
			// never had. Before KIP-279 A answered "2" (where its next epoch
			// starts) and B kept m1' at offset 1 while A has m1 there. Now A
			// answers (epoch 0, 2): B looks up its own end of epoch 0, which
			// is 1, and truncates there.
			name:       "KIP-279: fast double leader change",
			follower:   replicaLog{epochs: []storage.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 1}}, logEnd: 2, hw: 1},
			leader:     replicaLog{epochs: []storage.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 2}}, logEnd: 3},
			wantEnd:    1,
			wantRounds: 1,
		},
		{
			// KIP-279, several rounds: the follower asks for epoch 3, the
			// leader answers epoch 2 which the follower never saw; it cuts at
			// the end of its epoch 1 (8) and asks for epoch 1; the leader
			// answers (0, 4) and the follower, whose epoch 0 ended at 5,
			// settles at 4.
			name: "KIP-279: follower lacks the leader's epoch, asks again",
			follower: replicaLog{epochs: []storage.EpochEntry{
				{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 5}, {Epoch: 3, StartOffset: 8},
			}, logEnd: 10},
			leader: replicaLog{epochs: []storage.EpochEntry{
				{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 4}, {Epoch: 4, StartOffset: 9},
			}, logEnd: 12},
			wantEnd:    4,
			wantRounds: 2,
		},
		{
			name:       "follower behind in the same epoch keeps everything",
			follower:   replicaLog{epochs: []storage.EpochEntry{{Epoch: 5, StartOffset: 100}}, logEnd: 150},
			leader:     replicaLog{epochs: []storage.EpochEntry{{Epoch: 5, StartOffset: 100}, {Epoch: 6, StartOffset: 200}}, logEnd: 300},
			wantEnd:    150,
			wantRounds: 1,
		},
		{
			name:       "follower ahead in an epoch the leader ended earlier",
			follower:   replicaLog{epochs: []storage.EpochEntry{{Epoch: 5, StartOffset: 100}}, logEnd: 250},
			leader:     replicaLog{epochs: []storage.EpochEntry{{Epoch: 5, StartOffset: 100}, {Epoch: 6, StartOffset: 200}}, logEnd: 300},
			wantEnd:    200,
			wantRounds: 1,
		},
		{
			// The leader deleted old segments: epoch 1 is below its first
			// entry and it answers (1, 100). The follower keeps its records;
			// its next fetch gets OFFSET_OUT_OF_RANGE and resets to the
			// leader's log start.
			name:       "epoch older than the leader's retained log",
			follower:   replicaLog{epochs: []storage.EpochEntry{{Epoch: 1, StartOffset: 0}}, logEnd: 50},
			leader:     replicaLog{epochs: []storage.EpochEntry{{Epoch: 3, StartOffset: 100}}, logEnd: 120},
			wantEnd:    50,
			wantRounds: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end, rounds := reconcile(t, tc.follower, tc.leader)
			if end != tc.wantEnd || rounds != tc.wantRounds {
				t.Fatalf("truncated to %d in %d rounds, want %d in %d", end, rounds, tc.wantEnd, tc.wantRounds)
			}
		})
	}
}

// TestTruncationPointAnswers covers single answers directly, including the
// undefined ones and malformed input.
func TestTruncationPointAnswers(t *testing.T) {
	lookup := func(epoch int32, end int64) func(int32) (int32, int64) {
		return func(int32) (int32, int64) { return epoch, end }
	}
	tests := []struct {
		name      string
		local     FollowerLog
		requested int32
		leader    EpochEndOffset
		want      Truncation
		wantErr   string
	}{
		{
			name:      "leader knows no epoch: Kafka falls back to the HW",
			local:     FollowerLog{LogEndOffset: 20, HighWatermark: 12, EndOffsetFor: lookup(3, 20)},
			requested: 3, leader: EpochEndOffset{Epoch: UndefinedEpoch, EndOffset: UndefinedOffset},
			want: Truncation{Offset: 12, Complete: true},
		},
		{
			name:      "HW fallback never extends the log",
			local:     FollowerLog{LogEndOffset: 5, HighWatermark: 12, EndOffsetFor: lookup(3, 5)},
			requested: 3, leader: EpochEndOffset{Epoch: UndefinedEpoch, EndOffset: UndefinedOffset},
			want: Truncation{Offset: 5, Complete: true},
		},
		{
			name:      "end offset without epoch (v0 answer)",
			local:     FollowerLog{LogEndOffset: 20, EndOffsetFor: lookup(3, 20)},
			requested: 3, leader: EpochEndOffset{Epoch: UndefinedEpoch, EndOffset: 15},
			want: Truncation{Offset: 15, Complete: true},
		},
		{
			name:      "follower knows no epoch at or below the answer",
			local:     FollowerLog{LogEndOffset: 20, EndOffsetFor: lookup(UndefinedEpoch, UndefinedOffset)},
			requested: 3, leader: EpochEndOffset{Epoch: 2, EndOffset: 17},
			want: Truncation{Offset: 17, Complete: true},
		},
		{
			name:      "same epoch, leader ends later: nothing to cut",
			local:     FollowerLog{LogEndOffset: 20, EndOffsetFor: lookup(3, 20)},
			requested: 3, leader: EpochEndOffset{Epoch: 3, EndOffset: 40},
			want: Truncation{Offset: 20, Complete: true},
		},
		{
			name:      "leader answers a newer epoch than asked",
			local:     FollowerLog{LogEndOffset: 20, EndOffsetFor: lookup(3, 20)},
			requested: 3, leader: EpochEndOffset{Epoch: 4, EndOffset: 10},
			wantErr: "answered epoch 4",
		},
		{
			name:      "negative end offset",
			local:     FollowerLog{LogEndOffset: 20, EndOffsetFor: lookup(3, 20)},
			requested: 3, leader: EpochEndOffset{Epoch: 3, EndOffset: -5},
			wantErr: "negative",
		},
		{
			name:      "local lookup answers a newer epoch",
			local:     FollowerLog{LogEndOffset: 20, EndOffsetFor: lookup(5, 20)},
			requested: 3, leader: EpochEndOffset{Epoch: 3, EndOffset: 10},
			wantErr: "follower epoch lookup",
		},
		{
			name:      "no lookup",
			local:     FollowerLog{LogEndOffset: 20},
			requested: 3, leader: EpochEndOffset{Epoch: 3, EndOffset: 10},
			wantErr: "no epoch lookup",
		},
		{
			name:      "negative log end",
			local:     FollowerLog{LogEndOffset: -1, EndOffsetFor: lookup(3, 20)},
			requested: 3, leader: EpochEndOffset{Epoch: 3, EndOffset: 10},
			wantErr: "negative",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TruncationPoint(tc.local, tc.requested, tc.leader)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
