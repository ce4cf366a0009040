package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseTopicSelection(t *testing.T) {
	tests := []struct {
		in      string
		want    topicSelection
		wantErr string
	}{
		{in: "orders", want: topicSelection{topic: "orders"}},
		{in: " orders:2, 0,2 ", want: topicSelection{topic: "orders", partitions: []int32{0, 2}}},
		{in: "orders:", wantErr: `"" is not a partition number`},
		{in: "orders:x", wantErr: `"x" is not a partition number`},
		{in: "orders:-1", wantErr: `"-1" is not a partition number`},
		{in: "orders:3000000000", wantErr: `"3000000000" is not a partition number`},
		{in: ":1", wantErr: "want topic or topic:partition"},
	}
	for _, tt := range tests {
		got, err := parseTopicSelection(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestTopicSelectionsFlagRefusesRepeatedTopic(t *testing.T) {
	var f topicSelectionsFlag
	if err := f.Set("a:0"); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("b"); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("a:1"); err == nil || !strings.Contains(err.Error(), "topic a is given more than once") {
		t.Errorf("second --topic a: %v", err)
	}
	if f.String() != "a,b" {
		t.Errorf("String() = %q", f.String())
	}
}

func TestParseDatetime(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "1700000000123", want: 1700000000123},
		{in: "0", want: 0},
		{in: "2026-11-30T14:00:00Z", want: 1796047200000},
		{in: "2026-11-30T15:00:00.250+01:00", want: 1796047200250},
		{in: "-5", wantErr: "0 ms or later"},
		{in: "2026-11-30T14:00:00", wantErr: "RFC 3339 time with a zone"},
		{in: "yesterday", wantErr: "RFC 3339 time with a zone"},
		{in: "1960-01-01T00:00:00Z", wantErr: "after 1970"},
	}
	for _, tt := range tests {
		got, err := parseDatetime(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestResetTargetNeedsExactlyOneChoice(t *testing.T) {
	tests := []struct {
		flags   resetTargetFlags
		want    resetTarget
		wantErr string
	}{
		{flags: resetTargetFlags{earliest: true, set: map[string]bool{"to-earliest": true}}, want: resetTarget{kind: resetToEarliest}},
		{flags: resetTargetFlags{latest: true, set: map[string]bool{"to-latest": true}}, want: resetTarget{kind: resetToLatest}},
		{flags: resetTargetFlags{offset: 0, set: map[string]bool{"to-offset": true}}, want: resetTarget{kind: resetToOffset}},
		{flags: resetTargetFlags{datetime: "5", set: map[string]bool{"to-datetime": true}}, want: resetTarget{kind: resetToDatetime, millis: 5}},
		{flags: resetTargetFlags{set: map[string]bool{}}, wantErr: "(got none)"},
		{flags: resetTargetFlags{earliest: true, latest: true, set: map[string]bool{"to-earliest": true, "to-latest": true}}, wantErr: "(got --to-earliest, --to-latest)"},
		{flags: resetTargetFlags{set: map[string]bool{"to-earliest": true}}, wantErr: "--to-earliest=false chooses nothing"},
		{flags: resetTargetFlags{offset: -3, set: map[string]bool{"to-offset": true}}, wantErr: "--to-offset -3"},
		{flags: resetTargetFlags{datetime: "soon", set: map[string]bool{"to-datetime": true}}, wantErr: `--to-datetime "soon"`},
	}
	for i, tt := range tests {
		got, err := tt.flags.target()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("case %d: error %v, want one containing %q", i, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("case %d: got %+v, %v; want %+v", i, got, err, tt.want)
		}
	}
}

func TestPlanResets(t *testing.T) {
	a0, a1, b0 := topicPartition{"a", 0}, topicPartition{"a", 1}, topicPartition{"b", 0}
	bounds := map[topicPartition]logBounds{
		b0: {start: 0, end: 0},
		a1: {start: 5, end: 20},
		a0: {start: 0, end: 10},
	}
	type row struct {
		tp     topicPartition
		offset int64
		noted  bool
	}
	tests := []struct {
		name   string
		target resetTarget
		atTime map[topicPartition]int64
		want   []row
	}{
		{"earliest", resetTarget{kind: resetToEarliest}, nil, []row{{a0, 0, false}, {a1, 5, false}, {b0, 0, false}}},
		{"latest", resetTarget{kind: resetToLatest}, nil, []row{{a0, 10, false}, {a1, 20, false}, {b0, 0, false}}},
		// 3 is inside a-0, before the start of a-1, past the end of b-0.
		{"offset", resetTarget{kind: resetToOffset, offset: 3}, nil, []row{{a0, 3, false}, {a1, 5, true}, {b0, 0, true}}},
		{"datetime", resetTarget{kind: resetToDatetime, millis: 1}, map[topicPartition]int64{a0: 3, a1: 20, b0: 0},
			[]row{{a0, 3, false}, {a1, 20, false}, {b0, 0, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := planResets(tt.target, bounds, tt.atTime)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]row, 0, len(plan))
			for _, r := range plan {
				got = append(got, row{r.topicPartition, r.offset, r.note != ""})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plan %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := planResets(resetTarget{kind: resetToDatetime}, bounds, map[topicPartition]int64{a0: 1}); err == nil {
		t.Error("a partition missing from the by-time answer was not reported")
	}
}
