package storage

import (
	"errors"
	"strings"
	"testing"
)

func entries(pairs ...int64) []EpochEntry {
	var out []EpochEntry
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
	}
	return out
}

func TestEpochCacheAssign(t *testing.T) {
	tests := []struct {
		name  string
		start []EpochEntry
		epoch int32
		off   int64
		want  []EpochEntry
	}{
		{"first", nil, 0, 0, entries(0, 0)},
		{"newer epoch", entries(0, 0), 2, 10, entries(0, 0, 2, 10)},
		{"same epoch later offset is a no-op", entries(0, 0, 2, 10), 2, 15, entries(0, 0, 2, 10)},
		{"same epoch earlier offset moves it", entries(0, 0, 2, 10), 2, 5, entries(0, 0, 2, 5)},
		{"older epoch drops newer ones", entries(0, 0, 2, 10, 3, 20), 1, 15, entries(0, 0, 1, 15)},
		{"newer epoch at earlier offset drops entries at or after", entries(0, 0, 2, 10, 3, 20), 4, 10, entries(0, 0, 4, 10)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var persisted []EpochEntry
			c, err := NewEpochCache(tc.start, func(e []EpochEntry) error { persisted = e; return nil })
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Assign(tc.epoch, tc.off); err != nil {
				t.Fatal(err)
			}
			if got := c.Entries(); !equalEntries(got, tc.want) {
				t.Fatalf("entries %v, want %v", got, tc.want)
			}
			if persisted != nil && !equalEntries(persisted, tc.want) {
				t.Fatalf("persisted %v, want %v", persisted, tc.want)
			}
		})
	}
}

func TestEpochCacheEndOffsetFor(t *testing.T) {
	cache := entries(2, 10, 4, 30, 5, 50)
	tests := []struct {
		name      string
		entries   []EpochEntry
		requested int32
		wantEpoch int32
		wantEnd   int64
	}{
		{"latest epoch ends at log end", cache, 5, 5, 100},
		{"older epoch ends where the next starts", cache, 4, 4, 50},
		{"first epoch", cache, 2, 2, 30},
		{"skipped epoch answers with the one before", cache, 3, 2, 30},
		{"below the first epoch", cache, 1, 1, 10},
		{"above the latest", cache, 6, UndefinedEpoch, UndefinedOffset},
		{"undefined request", cache, -1, UndefinedEpoch, UndefinedOffset},
		{"empty cache", nil, 3, UndefinedEpoch, UndefinedOffset},
		{"single entry", entries(7, 0), 7, 7, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewEpochCache(tc.entries, nil)
			if err != nil {
				t.Fatal(err)
			}
			e, end := c.EndOffsetFor(tc.requested, 100)
			if e != tc.wantEpoch || end != tc.wantEnd {
				t.Fatalf("got (%d, %d), want (%d, %d)", e, end, tc.wantEpoch, tc.wantEnd)
			}
		})
	}
}

func TestEpochCacheTruncate(t *testing.T) {
	cache := entries(2, 10, 4, 30, 5, 50)
	tests := []struct {
		name    string
		fromEnd bool
		offset  int64
		want    []EpochEntry
	}{
		{"end past all", true, 60, cache},
		{"end at an epoch start", true, 50, entries(2, 10, 4, 30)},
		{"end inside an epoch", true, 40, entries(2, 10, 4, 30)},
		{"end before all", true, 5, nil},
		{"start before all", false, 5, cache},
		{"start at the first", false, 10, cache},
		{"start inside the first", false, 20, entries(2, 20, 4, 30, 5, 50)},
		{"start at the second", false, 30, entries(4, 30, 5, 50)},
		{"start past the last start", false, 70, entries(5, 70)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := NewEpochCache(cache, nil)
			var err error
			if tc.fromEnd {
				err = c.TruncateFromEnd(tc.offset)
			} else {
				err = c.TruncateFromStart(tc.offset)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Entries(); !equalEntries(got, tc.want) {
				t.Fatalf("entries %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEpochCachePersistFailure(t *testing.T) {
	boom := errors.New("disk gone")
	c, _ := NewEpochCache(nil, func([]EpochEntry) error { return boom })
	if err := c.Assign(1, 0); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
}

func TestEpochCheckpointFormat(t *testing.T) {
	want := entries(0, 0, 3, 1200)
	text := string(encodeEpochCheckpoint(want))
	if text != "0\n2\n0 0\n3 1200\n" {
		t.Fatalf("encoded %q", text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")[1:]
	got, err := parseEpochCheckpoint(lines)
	if err != nil || !equalEntries(got, want) {
		t.Fatalf("round trip %v %v", got, err)
	}
	bad := [][]string{
		{},
		{"x"},
		{"2", "0 0"},
		{"1", "0"},
		{"1", "a b"},
		{"2", "3 10", "2 20"},
		{"2", "2 10", "3 10"},
		{"1", "-1 0"},
		{"99999999"},
	}
	for _, lines := range bad {
		if _, err := parseEpochCheckpoint(lines); err == nil {
			t.Fatalf("accepted %q", lines)
		}
	}
}
