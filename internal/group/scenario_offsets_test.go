package group

import (
	"fmt"
	"strings"
	"testing"
)

func deleteGroup() op {
	return func(h *harness) {
		errs, out := h.c.DeleteGroups([]string{testGroup})
		h.take(out)
		h.events = append(h.events, "delete group: "+errName(errs[0]))
	}
}

func deleteOffsets(tps ...string) op {
	return func(h *harness) {
		resp, out := h.c.DeleteOffsets(testGroup, parseTPs(tps))
		h.take(out)
		if resp.Err != nil {
			h.events = append(h.events, "delete offsets: "+errName(resp.Err))
			return
		}
		var errs []string
		for _, p := range resp.Partitions {
			errs = append(errs, errName(p.Err))
		}
		h.events = append(h.events, "delete offsets: "+strings.Join(errs, ","))
	}
}

// parseTPs reads "topic-partition" specs.
func parseTPs(specs []string) []TopicPartition {
	var out []TopicPartition
	for _, s := range specs {
		topic, part, _ := strings.Cut(s, "-")
		var p int32
		fmt.Sscan(part, &p)
		out = append(out, TopicPartition{Topic: topic, Partition: p})
	}
	return out
}

func TestOffsetScenarios(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "commits are validated against the generation", steps: steps(stableAB(),
			step{6030, commit("a", -2, "t-0=5", "t-1=9/0123456789abcdefX"), []string{
				"record offset g t-0=5", "commit: ok,OFFSET_METADATA_TOO_LARGE",
			}},
			step{6040, commit("a", 5, "t-0=6"), []string{"commit: ILLEGAL_GENERATION"}},
			step{6050, commit("", -1, "t-0=6"), []string{"commit: UNKNOWN_MEMBER_ID"}},
			step{6060, commit("b", -2, "t-1=7"), []string{"record offset g t-1=7", "commit: ok"}},
			step{6070, fetchAll(), []string{"offsets: t-0=5,t-1=7"}},
			step{6080, failover(), []string{"failover"}},
			step{6090, fetchAll(), []string{"offsets: t-0=5,t-1=7"}},
			// During a rebalance members still own their partitions and may commit.
			step{6100, join("a"), nil},
			step{6110, commit("b", -2, "t-1=8"), []string{"record offset g t-1=8", "commit: ok"}},
		)},
		{name: "a commit to an unknown group needs generation -1", steps: []step{
			{0, commit("x", 3, "t-0=1"), []string{"commit: ILLEGAL_GENERATION"}},
			{10, describe(), []string{"Dead gen=0 proto= leader=- members="}},
			{20, commit("", -1, "t-0=1"), []string{"record offset g t-0=1", "commit: ok"}},
			{30, describe(), []string{"Empty gen=0 proto= leader=- members="}},
			{40, failover(), []string{"failover"}},
		}},
		{name: "offsets of a simple consumer expire by commit time", steps: []step{
			{0, commit("", -1, "t-0=1"), []string{"record offset g t-0=1", "commit: ok"}},
			{500000, commit("", -1, "t-1=1"), []string{"record offset g t-1=1", "commit: ok"}},
			{999999, expire(), nil},
			{1000000, expire(), []string{"tombstone offset g t-0"}},
			{1500000, expire(), []string{"tombstone offset g t-1"}},
			{1500001, describe(), []string{"Dead gen=0 proto= leader=- members="}},
		}},
		{name: "offsets expire a retention period after the group became empty", steps: steps(stableAB(),
			step{6030, commit("a", -2, "t-0=5"), []string{"record offset g t-0=5", "commit: ok"}},
			step{7000, leave("a", "b"), []string{"record group g gen=2 members=[]", "leave: ok,ok"}},
			step{1006999, expire(), nil},
			step{1007000, expire(), []string{"tombstone offset g t-0", "tombstone group g"}},
			step{1007010, describe(), []string{"Dead gen=0 proto= leader=- members="}},
			step{1007020, failover(), []string{"failover"}},
		)},
		{name: "a stable consumer group expires offsets of topics it left", steps: steps(stableAB(),
			step{6030, commit("a", -2, "t-0=5", "u-0=3"), []string{"record offset g t-0=5", "record offset g u-0=3", "commit: ok,ok"}},
			step{1006029, expire(), nil},
			step{1006030, expire(), []string{"tombstone offset g u-0"}},
			step{1006040, fetchAll(), []string{"offsets: t-0=5"}},
		)},
		{name: "delete group and offsets", steps: steps(stableAB(),
			step{6030, commit("a", -2, "t-0=5", "u-0=3"), []string{"record offset g t-0=5", "record offset g u-0=3", "commit: ok,ok"}},
			step{6040, deleteGroup(), []string{"delete group: NON_EMPTY_GROUP"}},
			step{6050, deleteOffsets("t-0", "u-0", "v-1"), []string{"tombstone offset g u-0", "delete offsets: GROUP_SUBSCRIBED_TO_TOPIC,ok,ok"}},
			step{7000, leave("a", "b"), []string{"record group g gen=2 members=[]", "leave: ok,ok"}},
			step{7010, deleteOffsets("t-0"), []string{"tombstone offset g t-0", "delete offsets: ok"}},
			step{7020, commit("", -1, "t-1=1"), []string{"record offset g t-1=1", "commit: ok"}},
			step{7030, deleteGroup(), []string{"tombstone offset g t-1", "tombstone group g", "delete group: ok"}},
			step{7040, deleteGroup(), []string{"delete group: GROUP_ID_NOT_FOUND"}},
			step{7050, deleteOffsets("t-0"), []string{"delete offsets: GROUP_ID_NOT_FOUND"}},
			step{7060, failover(), []string{"failover"}},
		)},
	})
}
