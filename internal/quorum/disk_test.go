package quorum

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

var testVoters = []uint64{1, 2, 3}

// diskModel is what the disk should hold after a sequence of steps.
type diskModel struct {
	entries   map[uint64]string // index -> "term/data"
	snapIndex uint64
	snapTerm  uint64
	snapData  string
	hs        [3]uint64 // term, vote, commit
}

func (m diskModel) clone() diskModel {
	m.entries = maps.Clone(m.entries)
	return m
}

func (m diskModel) last() uint64 {
	last := m.snapIndex
	for i := range m.entries {
		last = max(last, i)
	}
	return last
}

// diskStep is one operation and its effect on the model.
type diskStep struct {
	name string
	// shrinks says the step may durably remove entries before it completes
	// (overwrite, installed snapshot), so a crash inside it can leave fewer
	// entries than before it started.
	shrinks bool
	run     func(d *disk) error
	model   func(m *diskModel)
}

func entry(term, index uint64) *raftpb.Entry {
	return &raftpb.Entry{Term: new(term), Index: new(index), Type: raftpb.EntryNormal.Enum(),
		Data: []byte(fmt.Sprintf("data-%d-%d", term, index))}
}

func appendStep(term, from, to uint64) diskStep {
	return diskStep{
		name:    fmt.Sprintf("append %d..%d term %d", from, to, term),
		shrinks: true,
		run: func(d *disk) error {
			var es []*raftpb.Entry
			for i := from; i <= to; i++ {
				es = append(es, entry(term, i))
			}
			return d.appendEntries(es)
		},
		model: func(m *diskModel) {
			for i := range m.entries {
				if i >= from {
					delete(m.entries, i)
				}
			}
			for i := from; i <= to; i++ {
				m.entries[i] = fmt.Sprintf("%d/data-%d-%d", term, term, i)
			}
		},
	}
}

func hardStateStep(term, vote, commit uint64) diskStep {
	return diskStep{
		name: fmt.Sprintf("hard state %d/%d/%d", term, vote, commit),
		run: func(d *disk) error {
			return d.saveHardState(&raftpb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)})
		},
		model: func(m *diskModel) { m.hs = [3]uint64{term, vote, commit} },
	}
}

func snapshotOf(index, term uint64) *raftpb.Snapshot {
	return &raftpb.Snapshot{Data: []byte(fmt.Sprintf("state@%d", index)), Metadata: &raftpb.SnapshotMetadata{
		Index: new(index), Term: new(term), ConfState: &raftpb.ConfState{Voters: testVoters}}}
}

func compactStep(index, term, compactIndex uint64) diskStep {
	return diskStep{
		name: fmt.Sprintf("compact to %d, snapshot %d", compactIndex, index),
		run:  func(d *disk) error { return d.compact(snapshotOf(index, term), compactIndex) },
		model: func(m *diskModel) {
			m.snapIndex, m.snapTerm, m.snapData = index, term, fmt.Sprintf("state@%d", index)
			for i := range m.entries {
				if i <= index {
					delete(m.entries, i)
				}
			}
		},
	}
}

func installStep(index, term uint64) diskStep {
	return diskStep{
		name:    fmt.Sprintf("install snapshot %d term %d", index, term),
		shrinks: true,
		run:     func(d *disk) error { return d.installSnapshot(snapshotOf(index, term)) },
		model: func(m *diskModel) {
			m.snapIndex, m.snapTerm, m.snapData = index, term, fmt.Sprintf("state@%d", index)
			m.entries = map[uint64]string{}
		},
	}
}

var diskScenario = []diskStep{
	appendStep(1, 1, 5),
	hardStateStep(1, 1, 3),
	appendStep(2, 4, 7), // overwrites 4 and 5
	hardStateStep(2, 2, 6),
	compactStep(6, 2, 4),
	appendStep(2, 8, 30), // rolls segments
	hardStateStep(2, 2, 30),
	compactStep(28, 2, 25),
	installStep(50, 3),
	hardStateStep(3, 1, 50),
	appendStep(3, 51, 53),
	hardStateStep(3, 1, 53),
}

// models returns the model after 0, 1, ... len(steps) steps.
func models(steps []diskStep) []diskModel {
	m := diskModel{entries: map[uint64]string{}}
	out := []diskModel{m.clone()}
	for _, s := range steps {
		s.model(&m)
		out = append(out, m.clone())
	}
	return out
}

// runSteps opens the disk and runs steps until one fails; it returns how
// many completed.
func runSteps(fs vfs.FS, steps []diskStep) (done int, err error) {
	d, err := openDisk(fs, "q", 1024, quietLogger())
	if err != nil {
		return 0, err
	}
	for i, s := range steps {
		if err := s.run(d); err != nil {
			return i, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return len(steps), d.close()
}

var errInjected = errors.New("injected fault")

// TestDiskCrashAtEveryStep fails the k-th filesystem call (and every one
// after it: the process is dead), crashes the filesystem, reloads and checks
// that what survived is a state the steps could have left: nothing a
// completed step made durable is lost, and nothing is invented.
func TestDiskCrashAtEveryStep(t *testing.T) {
	ms := models(diskScenario)
	for _, torn := range []bool{false, true} {
		for k := 1; ; k++ {
			fs := vfs.NewMem()
			calls := 0
			fs.SetFault(func(op vfs.Op, path string) error {
				calls++
				if calls >= k {
					return errInjected
				}
				return nil
			})
			done, runErr := runSteps(fs, diskScenario)
			fs.SetFault(nil)
			fs.Crash(vfs.CrashOptions{TornWrites: torn, Seed: uint64(k)})
			name := fmt.Sprintf("torn=%v fault at call %d after %d steps", torn, k, done)
			checkReload(t, name, fs, ms, done, diskScenario)
			if runErr == nil {
				t.Logf("torn=%v: %d crash points", torn, k)
				break // the fault never fired: every crash point was covered
			}
		}
	}
}

// checkReload loads the crashed filesystem and compares with the models.
func checkReload(t *testing.T, name string, fs vfs.FS, ms []diskModel, done int, steps []diskStep) {
	t.Helper()
	d, err := openDisk(fs, "q", 1024, quietLogger())
	if err != nil {
		t.Fatalf("%s: reopen: %v", name, err)
	}
	defer d.close()
	got, err := d.load(&raftpb.ConfState{Voters: testVoters}, true)
	if err != nil {
		t.Fatalf("%s: load: %v", name, err)
	}
	before := ms[done]
	candidates := []diskModel{before}
	if done < len(steps) {
		candidates = append(candidates, ms[done+1])
	}
	snapIndex := got.snapshot.GetMetadata().GetIndex()
	if !slices.ContainsFunc(candidates, func(m diskModel) bool {
		return m.snapIndex == snapIndex && (snapIndex == 0 || string(got.snapshot.GetData()) == m.snapData)
	}) {
		t.Fatalf("%s: snapshot at %d is neither before nor after the interrupted step", name, snapIndex)
	}
	hs := [3]uint64{got.hardState.GetTerm(), got.hardState.GetVote(), got.hardState.GetCommit()}
	if !slices.ContainsFunc(candidates, func(m diskModel) bool {
		want := m.hs
		want[2] = max(want[2], snapIndex)
		return hs == want
	}) {
		t.Fatalf("%s: hard state %v is neither before nor after the interrupted step", name, hs)
	}
	first, _ := got.storage.FirstIndex()
	last, _ := got.storage.LastIndex()
	loadedEntries := map[uint64]string{}
	if last >= first {
		es, err := got.storage.Entries(first, last+1, 1<<40)
		if err != nil {
			t.Fatalf("%s: entries: %v", name, err)
		}
		for _, e := range es {
			loadedEntries[e.GetIndex()] = fmt.Sprintf("%d/%s", e.GetTerm(), e.GetData())
		}
	}
	if !slices.ContainsFunc(candidates, func(m diskModel) bool {
		for i, v := range loadedEntries {
			if i > m.snapIndex && m.entries[i] != v {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("%s: loaded entries %v are not a prefix of the log before or after the interrupted step", name, loadedEntries)
	}
	if last < before.hs[2] {
		t.Fatalf("%s: log ends at %d, below the committed index %d", name, last, before.hs[2])
	}
	if done < len(steps) && !steps[done].shrinks && last < before.last() {
		t.Fatalf("%s: log ends at %d, durable log ended at %d", name, last, before.last())
	}
}

func TestDiskRefusesCorruptStateFiles(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		corrupt func(fs *vfs.Mem) error
	}{
		{"flipped hard state byte", hardStateFileName, func(fs *vfs.Mem) error { return fs.Corrupt("q/"+hardStateFileName, 6, 0xFF) }},
		{"flipped snapshot byte", snapshotFileName, func(fs *vfs.Mem) error { return fs.Corrupt("q/"+snapshotFileName, 9, 0x01) }},
		{"unknown version", hardStateFileName, func(fs *vfs.Mem) error { return fs.Corrupt("q/"+hardStateFileName, 0, 0x07) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := vfs.NewMem()
			if _, err := runSteps(fs, diskScenario[:5]); err != nil {
				t.Fatal(err)
			}
			if err := tt.corrupt(fs); err != nil {
				t.Fatal(err)
			}
			d, err := openDisk(fs, "q", 1024, quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer d.close()
			if _, err := d.load(&raftpb.ConfState{Voters: testVoters}, true); !errors.Is(err, ErrCorruptState) {
				t.Fatalf("load: err = %v, want ErrCorruptState", err)
			}
		})
	}
}

func TestDiskRefusesChangedVoters(t *testing.T) {
	fs := vfs.NewMem()
	if _, err := runSteps(fs, diskScenario[:5]); err != nil {
		t.Fatal(err)
	}
	d, err := openDisk(fs, "q", 1024, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if _, err := d.load(&raftpb.ConfState{Voters: []uint64{1, 2, 4}}, true); err == nil {
		t.Fatal("load with different voters succeeded")
	}
}

func TestStateFileRoundTrip(t *testing.T) {
	hs := &raftpb.HardState{Term: new(uint64(7)), Vote: new(uint64(2)), Commit: new(uint64(99))}
	data, err := encodeStateFile(hs)
	if err != nil {
		t.Fatal(err)
	}
	got := &raftpb.HardState{}
	if err := decodeStateFile("x", data, got); err != nil || !proto.Equal(got, hs) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for n := range len(data) {
		if err := decodeStateFile("x", data[:n], &raftpb.HardState{}); err == nil && n < len(data) {
			t.Fatalf("truncated to %d bytes: decoded without error", n)
		}
	}
}
