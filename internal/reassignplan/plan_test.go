package reassignplan

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, json, wantErr string
	}{
		{"kafka's own format", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`, ""},
		{"without log dirs", `{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[3]}]}`, ""},
		{"wrong version", `{"version":2,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`, "version 2"},
		{"no partitions", `{"version":1,"partitions":[]}`, "no partitions"},
		{"twice", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}`, "listed twice"},
		{"empty replicas", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`, "0 replicas"},
		{"duplicate replica", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`, "listed twice"},
		{"negative partition", `{"version":1,"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}`, "bad partition"},
		{"a real log dir", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/data","any"]}]}`, ""},
		{"a relative log dir", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["data"]}]}`, "absolute path"},
		{"log dirs miscounted", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}`, "1 log_dirs for 2"},
		{"unknown field", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"brokers":[1]}]}`, "unknown field"},
		{"not json", `version=1`, "invalid character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Parse: %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestFormatRoundTrips(t *testing.T) {
	as := []Assignment{{Topic: "b", Partition: 0, Replicas: []int32{2, 1}}, {Topic: "a", Partition: 1, Replicas: []int32{3}}}
	got := string(Format(as))
	want := `{"version":1,"partitions":[{"topic":"a","partition":1,"replicas":[3]},{"topic":"b","partition":0,"replicas":[2,1]}]}`
	if got != want {
		t.Fatalf("Format = %s\nwant     %s", got, want)
	}
	p, err := Parse([]byte(got))
	if err != nil || len(p.Partitions) != 2 {
		t.Fatalf("Parse(Format) = %+v, %v", p, err)
	}
}

func TestGenerate(t *testing.T) {
	// Six partitions of RF 2 on brokers 1-3, moved to 1, 2 and 4.
	var current []Assignment
	for p := range int32(6) {
		current = append(current, Assignment{Topic: "t", Partition: p, Replicas: []int32{1 + p%3, 1 + (p+1)%3}})
	}
	plan, err := Generate(current, []int32{4, 2, 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	replicas, leaders := map[int32]int{}, map[int32]int{}
	moved := 0
	for i, a := range plan {
		if len(a.Replicas) != 2 || a.Replicas[0] == a.Replicas[1] {
			t.Fatalf("%+v: want two distinct replicas", a)
		}
		leaders[a.Replicas[0]]++
		for _, r := range a.Replicas {
			replicas[r]++
			if !slices.Contains([]int32{1, 2, 4}, r) {
				t.Fatalf("%+v: broker %d not asked for", a, r)
			}
			if !slices.Contains(current[i].Replicas, r) {
				moved++
			}
		}
	}
	for _, b := range []int32{1, 2, 4} {
		if replicas[b] != 4 || leaders[b] != 2 {
			t.Fatalf("broker %d: %d replicas, %d leaderships; want 4 and 2 (plan %+v)", b, replicas[b], leaders[b], plan)
		}
	}
	// Broker 3's four replicas must move; balance needs no other move.
	if moved != 4 {
		t.Fatalf("%d replicas moved, want 4 (plan %+v)", moved, plan)
	}
	again, _ := Generate(current, []int32{1, 2, 4}, 0)
	if string(Format(again)) != string(Format(plan)) {
		t.Fatal("the same input gave another plan")
	}

	// A new replication factor.
	up, err := Generate(current, []int32{1, 2, 3}, 3)
	if err != nil || len(up[0].Replicas) != 3 {
		t.Fatalf("rf 3: %+v, %v", up, err)
	}
	if _, err := Generate(current, []int32{1}, 0); err == nil {
		t.Fatal("replication factor above the broker count accepted")
	}
	if _, err := Generate(current, []int32{1, 1, 2}, 0); err == nil {
		t.Fatal("a broker listed twice accepted")
	}
}

func TestDecommission(t *testing.T) {
	current := []Assignment{
		{Topic: "t", Partition: 0, Replicas: []int32{3, 1}},
		{Topic: "t", Partition: 1, Replicas: []int32{1, 2}},
		{Topic: "t", Partition: 2, Replicas: []int32{2, 3}},
		{Topic: "u", Partition: 0, Replicas: []int32{3, 4}},
	}
	plan, err := Decommission(current, 3, []int32{1, 2, 3, 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Loads before: 1:2 2:2 4:1. t-0 takes 4 (the least loaded, at the
	// preferred position); t-2 then 1 (1 and 4 both at 2, 1 the lower
	// id); u-0 then 2 (at 2, below 1's 3; 4 is in it already).
	want := []Assignment{
		{Topic: "t", Partition: 0, Replicas: []int32{4, 1}},
		{Topic: "t", Partition: 2, Replicas: []int32{2, 1}},
		{Topic: "u", Partition: 0, Replicas: []int32{2, 4}},
	}
	if string(Format(plan)) != string(Format(want)) {
		t.Fatalf("plan %s\nwant %s", Format(plan), Format(want))
	}
	if _, err := Decommission([]Assignment{{Topic: "t", Replicas: []int32{1, 2}}}, 1, []int32{1, 2}, nil); err == nil {
		t.Fatal("a partition with nowhere to go accepted")
	}
}

// With racks, the replacement keeps a partition spread: broker 3 (rack a)
// leaves t-0 = [3, 1] with 1 on rack b; broker 2 is the least loaded but
// on rack b too, so broker 4, rack a, takes it. Where every candidate
// shares a rack, the load decides as without racks.
func TestDecommissionRespectsRacks(t *testing.T) {
	current := []Assignment{
		{Topic: "t", Partition: 0, Replicas: []int32{3, 1}},
		{Topic: "t", Partition: 1, Replicas: []int32{1, 4}},
		{Topic: "t", Partition: 2, Replicas: []int32{4, 1}},
	}
	racks := map[int32]string{1: "b", 2: "b", 3: "a", 4: "a"}
	plan, err := Decommission(current, 3, []int32{1, 2, 3, 4}, racks)
	if err != nil {
		t.Fatal(err)
	}
	want := []Assignment{{Topic: "t", Partition: 0, Replicas: []int32{4, 1}}}
	if string(Format(plan)) != string(Format(want)) {
		t.Fatalf("plan %s\nwant %s", Format(plan), Format(want))
	}
	if plan, _ := Decommission(current, 3, []int32{1, 2, 3, 4}, nil); plan[0].Replicas[0] != 2 {
		t.Fatalf("without racks the least loaded broker 2 should take t-0: %s", Format(plan))
	}
}
