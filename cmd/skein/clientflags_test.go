package main

import (
	"flag"
	"io"
	"reflect"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		args           []string
		wantPositional []string
		wantN          int
	}{
		{[]string{"a", "--n", "3", "b"}, []string{"a", "b"}, 3},
		{[]string{"--n", "2", "a"}, []string{"a"}, 2},
		{[]string{"a", "--", "--n", "5"}, []string{"a", "--n", "5"}, 0},
		{nil, nil, 0},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		n := fs.Int("n", 0, "")
		got, err := parseInterspersed(fs, tt.args)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if !reflect.DeepEqual(got, tt.wantPositional) || *n != tt.wantN {
			t.Errorf("%q: positional %q n=%d, want %q n=%d", tt.args, got, *n, tt.wantPositional, tt.wantN)
		}
	}
}

func TestKeyValuesFlag(t *testing.T) {
	var f keyValuesFlag
	for _, v := range []string{"a=1", " b =x=y", "a=2", "empty="} {
		if err := f.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	want := keyValuesFlag{{"a", "1"}, {"b", "x=y"}, {"a", "2"}, {"empty", ""}}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got %v, want %v", f, want)
	}
	for _, bad := range []string{"novalue", "=v", " =v"} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}
