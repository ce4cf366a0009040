package group

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// joinedABC brings dynamic members a (leader), b and c to generation 1's
// JoinGroup answers at t=6000, with assignment writes held from then on.
func joinedABC() []step {
	return []step{
		{0, join("a"), nil},
		{100, join("b"), nil},
		{200, join("c"), nil},
		{3000, tick(), nil},
		{6000, both(tick(), holdWrites()), []string{
			"join a: gen=1 proto=range leader=a members=a,b,c",
			"join b: gen=1 proto=range leader=a",
			"join c: gen=1 proto=range leader=a",
		}},
	}
}

// The leader's assignment takes effect only once its record is committed,
// as in Kafka: until then the group stays CompletingRebalance and every
// sync of the generation, before or after the leader's, waits.
func TestAssignmentWriteScenarios(t *testing.T) {
	const writingGen1 = `writing group g gen=1 members=[a="p0" b="p1" c="p2"]`
	runScenarios(t, []scenario{
		{name: "syncs are answered once the assignment is committed", steps: steps(joinedABC(),
			step{6010, sync("b"), nil},
			step{6020, sync("a", "a=p0", "b=p1", "c=p2"), []string{writingGen1}},
			step{6030, describe(), []string{"CompletingRebalance gen=1 proto= leader=a members=a,b,c"}},
			// A follower syncing during the write waits too: an empty
			// assignment now, or one a failover loses, would be wrong.
			step{6040, sync("c"), nil},
			step{6050, heartbeat("b"), []string{"heartbeat b: ok"}},
			step{6060, join("b"), []string{"join b: gen=1 proto=range leader=a"}},
			step{6070, commit("b", -2, "t-0=1"), []string{"commit: REBALANCE_IN_PROGRESS"}},
			step{6080, written(nil), []string{
				`record group g gen=1 members=[a="p0" b="p1" c="p2"]`,
				`sync a: "p0"`,
				`sync b: "p1"`,
				`sync c: "p2"`,
			}},
			step{6090, describe(), []string{"Stable gen=1 proto=range leader=a members=a,b,c"}},
			step{6100, failover(), []string{"failover"}},
			step{6110, sync("b"), []string{`sync b: "p1"`}},
		)},
		{name: "a leader's retry during the write waits for it", steps: steps(joinedABC(),
			step{6010, sync("a", "a=p0", "b=p1", "c=p2"), []string{writingGen1}},
			step{6020, sync("a", "a=x", "b=y", "c=z"), []string{"sync a: REBALANCE_IN_PROGRESS"}},
			step{6030, both(sync("b"), sync("c")), nil},
			step{6040, written(nil), []string{
				`record group g gen=1 members=[a="p0" b="p1" c="p2"]`,
				`sync a: "p0"`,
				`sync b: "p1"`,
				`sync c: "p2"`,
			}},
		)},
		{name: "a failed write answers the syncs with the mapped error and rebalances", steps: steps(joinedABC(),
			step{6010, sync("b"), nil},
			step{6020, sync("a", "a=p0", "b=p1", "c=p2"), []string{writingGen1}},
			step{6030, written(kerr.NotEnoughReplicas), []string{
				"write failed: NOT_ENOUGH_REPLICAS",
				"sync a: COORDINATOR_NOT_AVAILABLE",
				"sync b: COORDINATOR_NOT_AVAILABLE",
			}},
			step{6040, describe(), []string{"PreparingRebalance gen=1 proto= leader=a members=a,b,c"}},
			// c had not synced yet: it learns of the rebalance like anyone.
			step{6050, sync("c"), []string{"sync c: REBALANCE_IN_PROGRESS"}},
			step{6060, heartbeat("c"), []string{"heartbeat c: REBALANCE_IN_PROGRESS"}},
			step{6070, both(join("a"), join("b"), join("c")), []string{
				"join a: gen=2 proto=range leader=a members=a,b,c",
				"join b: gen=2 proto=range leader=a",
				"join c: gen=2 proto=range leader=a",
			}},
			step{6080, both(sync("b"), sync("c"), sync("a", "a=q0", "b=q1", "c=q2")), []string{
				`writing group g gen=2 members=[a="q0" b="q1" c="q2"]`,
			}},
			step{6090, written(nil), []string{
				`record group g gen=2 members=[a="q0" b="q1" c="q2"]`,
				`sync a: "q0"`,
				`sync b: "q1"`,
				`sync c: "q2"`,
			}},
			step{6100, failover(), []string{"failover"}},
		)},
		{name: "a lost leadership answers NOT_COORDINATOR", steps: steps(joinedABC(),
			step{6010, sync("a", "a=p0", "b=p1", "c=p2"), []string{writingGen1}},
			step{6020, written(fmt.Errorf("%w: append on a deposed leader", kerr.NotLeaderForPartition)), []string{
				"write failed: NOT_LEADER_FOR_PARTITION",
				"sync a: NOT_COORDINATOR",
			}},
		)},
		{name: "a member leaving during the write makes its outcome stale", steps: steps(joinedABC(),
			step{6010, both(sync("b"), sync("c")), nil},
			step{6020, sync("a", "a=p0", "b=p1", "c=p2"), []string{writingGen1}},
			step{6030, leave("c"), []string{
				"sync c: UNKNOWN_MEMBER_ID",
				"sync a: REBALANCE_IN_PROGRESS",
				"sync b: REBALANCE_IN_PROGRESS",
				"leave: ok",
			}},
			step{6040, both(join("a"), join("b")), []string{
				"join a: gen=2 proto=range leader=a members=a,b",
				"join b: gen=2 proto=range leader=a",
			}},
			step{6050, both(sync("b"), sync("a", "a=q0", "b=q1")), []string{`writing group g gen=2 members=[a="q0" b="q1"]`}},
			// Generation 1's record commits after all: nothing happens, and
			// in particular generation 2's syncs keep waiting.
			step{6060, written(nil), []string{`record group g gen=1 members=[a="p0" b="p1" c="p2"]`}},
			step{6070, describe(), []string{"CompletingRebalance gen=2 proto= leader=a members=a,b"}},
			step{6080, written(nil), []string{
				`record group g gen=2 members=[a="q0" b="q1"]`,
				`sync a: "q0"`,
				`sync b: "q1"`,
			}},
			step{6090, failover(), []string{"failover"}},
		)},
		{name: "a stale failure after a new member joined changes nothing", steps: steps(joinedABC(),
			step{6010, sync("a", "a=p0", "b=p1", "c=p2"), []string{writingGen1}},
			step{6020, join("d"), []string{"sync a: REBALANCE_IN_PROGRESS"}},
			step{6030, both(join("a"), join("b"), join("c")), []string{
				"join a: gen=2 proto=range leader=a members=a,b,c,d",
				"join b: gen=2 proto=range leader=a",
				"join c: gen=2 proto=range leader=a",
				"join d: gen=2 proto=range leader=a",
			}},
			step{6040, sync("b"), nil},
			step{6050, written(kerr.RequestTimedOut), []string{"write failed: REQUEST_TIMED_OUT"}},
			step{6060, describe(), []string{"CompletingRebalance gen=2 proto= leader=a members=a,b,c,d"}},
			step{6070, sync("a", "a=q0", "b=q1", "c=q2", "d=q3"), []string{
				`writing group g gen=2 members=[a="q0" b="q1" c="q2" d="q3"]`,
			}},
			step{6080, written(nil), []string{
				`record group g gen=2 members=[a="q0" b="q1" c="q2" d="q3"]`,
				`sync a: "q0"`,
				`sync b: "q1"`,
			}},
		)},
		{name: "the sync timeout during the write removes who never synced", steps: steps(joinedABC(),
			step{6010, sync("b"), nil},
			step{6020, sync("a", "a=p0", "b=p1", "c=p2"), []string{writingGen1}},
			// Everyone heartbeats, but c never syncs: the rebalance timeout
			// (20s) after the join answers drops it, and the write's outcome
			// is stale.
			step{15000, both(heartbeat("a"), heartbeat("b"), heartbeat("c")), []string{
				"heartbeat a: ok", "heartbeat b: ok", "heartbeat c: ok",
			}},
			step{24000, both(heartbeat("a"), heartbeat("b"), heartbeat("c")), []string{
				"heartbeat a: ok", "heartbeat b: ok", "heartbeat c: ok",
			}},
			step{26000, tick(), []string{
				"sync a: REBALANCE_IN_PROGRESS",
				"sync b: REBALANCE_IN_PROGRESS",
			}},
			step{26010, written(nil), []string{`record group g gen=1 members=[a="p0" b="p1" c="p2"]`}},
			step{26020, describe(), []string{"PreparingRebalance gen=1 proto= leader=a members=a,b"}},
		)},
	})
}

func TestStoreErrorMapsLikeKafka(t *testing.T) {
	tests := []struct {
		err  error
		want error
	}{
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable},
		{fmt.Errorf("offset 7: %w", kerr.NotEnoughReplicasAfterAppend), kerr.CoordinatorNotAvailable},
		{kerr.RequestTimedOut, kerr.CoordinatorNotAvailable},
		{kerr.UnknownTopicOrPartition, kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator},
		{fmt.Errorf("%w: disk gone", kerr.KafkaStorageError), kerr.NotCoordinator},
		{kerr.MessageTooLarge, kerr.UnknownServerError},
		{kerr.RecordListTooLarge, kerr.UnknownServerError},
		{kerr.CorruptMessage, kerr.CorruptMessage},
		{errors.New("not a kafka error"), kerr.CoordinatorNotAvailable},
	}
	for _, tt := range tests {
		if got := storeError(tt.err); got != tt.want {
			t.Errorf("storeError(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
