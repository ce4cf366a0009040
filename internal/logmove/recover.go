package logmove

import (
	"fmt"
	"path/filepath"
)

// Found is what recovery found of one partition in one log directory.
type Found struct {
	Root string
	// Live: <Root>/<name> exists (a partition directory).
	Live bool
	// Marker is the future directory the live one's move marker names,
	// "" when it has none: the swap to that future was decided.
	Marker string
	// Futures are the <name>.<id>-future directories in Root.
	Futures []string
}

// FixKind is one repair recovery makes.
type FixKind int

const (
	// Promote renames the future directory Dir to To (its partition's
	// name in the same root): finishing a decided swap.
	Promote FixKind = iota + 1
	// Retire deletes the superseded log Dir (renamed -delete first).
	Retire
	// Discard deletes a future log Dir whose swap was never decided.
	Discard
	// Unmark removes the marker from Dir, which stays authoritative.
	Unmark
	// Resume goes on with the interrupted move to root To, keeping its
	// future log Dir: once the partition is open, ResumeFrom decides how
	// much of it is kept, as Kafka resumes its future logs.
	Resume
)

// Fix is one repair.
type Fix struct {
	Kind FixKind
	Dir  string
	To   string
}

// Recover decides what to do with the directories one partition (name)
// has in the broker's log.dirs after a restart. The swap's order
// (storage.Log.AdoptFuture) is: marker written in the current directory
// (the decision), future renamed to the partition's name in its root,
// current renamed -delete. So:
//
//   - one live directory without a marker: it is the log; futures are
//     undecided copies: the last one listed is kept and its move resumed
//     (what of it is kept is decided once both logs are open), any other
//     discarded;
//   - one live directory with a marker whose future exists: the swap was
//     decided and the rename not done; finish it;
//   - two live directories: the rename was done; the one with the marker
//     is the old one;
//   - no live directory: the partition was deleted while moving.
func Recover(name string, found []Found) ([]Fix, error) {
	var live []Found
	var futures []string
	for _, f := range found {
		if f.Live {
			live = append(live, f)
		}
		futures = append(futures, f.Futures...)
	}
	var fixes []Fix
	discard := func(except string) {
		for _, f := range futures {
			if f != except {
				fixes = append(fixes, Fix{Kind: Discard, Dir: f})
			}
		}
	}
	switch len(live) {
	case 0:
		discard("")
		return fixes, nil
	case 1:
		l := live[0]
		cur := filepath.Join(l.Root, name)
		if l.Marker == "" {
			n := len(futures)
			if n == 0 {
				return nil, nil
			}
			keep := futures[n-1]
			discard(keep)
			fixes = append(fixes, Fix{Kind: Resume, Dir: keep, To: filepath.Dir(keep)})
			return fixes, nil
		}
		for _, f := range futures {
			if filepath.Clean(f) == filepath.Clean(l.Marker) {
				fixes = append(fixes,
					Fix{Kind: Promote, Dir: f, To: filepath.Join(filepath.Dir(f), name)},
					Fix{Kind: Retire, Dir: cur})
				discard(f)
				return fixes, nil
			}
		}
		// The marker names a future that is not there (removed by
		// hand): the current log is all there is.
		fixes = append(fixes, Fix{Kind: Unmark, Dir: cur})
		discard("")
		return fixes, nil
	case 2:
		a, b := live[0], live[1]
		if (a.Marker == "") == (b.Marker == "") {
			return nil, fmt.Errorf("partition %s is in both %s and %s and neither is marked as moved: remove one by hand", name, a.Root, b.Root)
		}
		old := a
		if b.Marker != "" {
			old = b
		}
		fixes = append(fixes, Fix{Kind: Retire, Dir: filepath.Join(old.Root, name)})
		discard("")
		return fixes, nil
	}
	return nil, fmt.Errorf("partition %s is in %d log directories", name, len(live))
}
