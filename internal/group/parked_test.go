package group

import (
	"errors"
	"testing"
)

func TestParkedRoutesAnswersAndAbandonsTheRest(t *testing.T) {
	var p Parked
	var got []string
	join := func(name string) RequestID {
		return p.Join(name, func(r JoinResponse) { got = append(got, name+":"+errString(r.Err)) })
	}
	sync := func(name string) RequestID {
		return p.Sync(func(r SyncResponse) { got = append(got, name+":"+errString(r.Err)) })
	}
	j1, j2, s1, s2 := join("j1"), join("j2"), sync("s1"), sync("s2")

	answers, unknown := p.Answers(Output{
		Joins: []JoinResult{{To: j1}, {To: 99}},
		Syncs: []SyncResult{{To: s1}},
	})
	if len(unknown) != 1 || unknown[0] != 99 {
		t.Fatalf("unknown = %v, want [99]", unknown)
	}
	if len(answers) != 2 {
		t.Fatalf("%d answers, want 2", len(answers))
	}
	failed := errors.New("write failed")
	answers[0](nil)    // the coordinator's answer
	answers[1](failed) // the write's error in its place
	if _, again := p.Answers(Output{Joins: []JoinResult{{To: j1}}}); len(again) != 1 {
		t.Fatal("an answered request is still parked")
	}
	for _, a := range p.Abandon(failed) {
		a()
	}
	want := []string{"j1:", "s1:write failed", "j2:write failed", "s2:write failed"}
	if len(got) != len(want) {
		t.Fatalf("answers %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("answers %v, want %v", got, want)
		}
	}
	if _, unknown := p.Answers(Output{Syncs: []SyncResult{{To: s2}}, Joins: []JoinResult{{To: j2}}}); len(unknown) != 2 {
		t.Fatal("abandoned requests are still parked")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
