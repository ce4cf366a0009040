package sim

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/balancer"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/logmove"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// Several log directories per node (Options.LogDirs) and the moves of
// replicas between them (AlterReplicaLogDirs, KIP-113; FaultMix.LogDirMoves).
// A node's directories are on its one simulated disk. New replicas are
// placed as node places them (logmove.Place); the API handler serves
// AlterReplicaLogDirs through the backend, which decides as node's does
// (logmove.Decide); a move is node's copier (logmove.Next stepped through
// storage.MoveProgress and ApplyMoveStep) run as events on simulated time:
// one bounded copy per event while appends go on, and the paused last
// stretch and the swap in one event (a single thread holds the partition
// as node's lock does). A restart repairs what a crash left
// (storage.RecoverMoves) and resumes the moves (logmove.Reopen,
// storage.Log.ResumeFuture).

const (
	// moveStepDelay is the time between two copy steps of a move.
	moveStepDelay = 20 * time.Millisecond
	// moveCopyBytes bounds one unpaused copy step.
	moveCopyBytes = 1 << 10
	// movePausedOffsets and movePausedBytes bound the paused stretch
	// (logmove.Progress.MaxPausedOffsets), scaled down to the simulated
	// logs so that moves copy across appends and faults before pausing.
	movePausedOffsets = 16
	movePausedBytes   = 2 << 10
	// maxPausedSteps bounds the steps of one paused stretch.
	maxPausedSteps = 10_000
	// logDirOpEndpoint is the network endpoint of the operator moving
	// replicas between directories.
	logDirOpEndpoint = clientEndpointBase + 480
)

// logDirRoots are a node's log directories: "data" alone (as before
// Options.LogDirs), or data, data1, data2...
func (c *Cluster) logDirRoots() []string {
	roots := []string{"data"}
	for i := 1; i < c.opts.LogDirs; i++ {
		roots = append(roots, "data"+strconv.Itoa(i))
	}
	return roots
}

// logDirs is a process's log directories and its moves between them
// (node's logMoves).
type logDirs struct {
	roots []string
	moves map[*replica]*logDirMove
	// preferred: directories asked for replicas not hosted yet, and the
	// destinations of moves a restart interrupted, by partition name.
	preferred map[string]string
	// kept: the future logs a restart left, by partition name.
	kept map[string]string
}

// logDirMove is one move under way.
type logDirMove struct {
	r    *replica
	root string
	fut  *storage.Log
}

// openLogDirs readies a starting process's directories: with several, the
// repairs of interrupted moves (before any replica opens, as node's).
func (p *process) openLogDirs() error {
	p.dirs = logDirs{roots: p.n.c.logDirRoots(), moves: map[*replica]*logDirMove{}, preferred: map[string]string{}, kept: map[string]string{}}
	if len(p.dirs.roots) == 1 {
		return nil
	}
	for _, root := range p.dirs.roots {
		// Each log directory is a disk of its own, as with JBOD: a
		// syncfs in one (node's creation of replicas) makes nothing
		// durable in another.
		p.n.fs.Mount(root)
		// Durably, as node creates them: the metadata quorum writes
		// in "data" at once.
		if err := vfs.MkdirAllDurably(p.n.fs, root); err != nil {
			return fmt.Errorf("create log dir %s: %w", root, err)
		}
	}
	resume, err := storage.RecoverMoves(p.n.fs, p.dirs.roots, storage.Options{Logger: p.log})
	if err != nil {
		p.n.c.violation("%s: %v", p.n, err)
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(resume)) {
		mv := resume[name]
		p.dirs.preferred[name], p.dirs.kept[name] = mv.Root, mv.Future
		p.n.tracef("restart keeps the future log %s of %s", mv.Future, name)
	}
	return nil
}

// replicaDir is where replica name is opened: the directory it has on
// disk, else where node would create it.
func (p *process) replicaDir(name string) string {
	if len(p.dirs.roots) == 1 {
		return path.Join("data", name)
	}
	for _, root := range p.dirs.roots {
		if _, err := p.n.fs.Stat(path.Join(root, name)); err == nil {
			return path.Join(root, name)
		}
	}
	counts := map[string]int{}
	for _, r := range p.parts {
		counts[path.Dir(r.log.Dir())]++
	}
	pref, ok := p.dirs.preferred[name]
	delete(p.dirs.preferred, name)
	return path.Join(logmove.Place(p.dirs.roots, counts, pref, ok), name)
}

// deleteDir deletes a retired or future log's directory: with several log
// directories crash-safely as node does (storage.DeleteDir), so that a
// crash never leaves an older copy of a replica beside a newer one in
// another directory; with one, as the simulator always has (a crash may
// bring the directory back, to be swept).
func (p *process) deleteDir(dir string) error {
	if len(p.dirs.roots) == 1 || p.n.c.opts.unsafeLogDelete {
		return p.n.fs.RemoveAll(dir)
	}
	p.n.moveSeq++
	return storage.DeleteDir(p.n.fs, dir, "d"+strconv.FormatUint(p.n.moveSeq, 10))
}

func rootOf(r *replica) string { return path.Dir(r.log.Dir()) }

// describeLogDirs is DescribeLogDirs, as node's: every directory with the
// replicas open in it and the future logs of the moves under way.
func (p *process) describeLogDirs() []api.LogDirDescription {
	byDir := map[string][]api.LogDirPartition{}
	for _, r := range p.partitionList() {
		lag := max(r.core.HighWatermark()-r.log.LogEndOffset(), 0)
		byDir[rootOf(r)] = append(byDir[rootOf(r)], api.LogDirPartition{Topic: r.topic, Partition: r.index, Size: r.log.Size(), OffsetLag: lag})
	}
	for _, r := range p.partitionList() {
		if mv := p.dirs.moves[r]; mv != nil {
			lag := max(r.log.LogEndOffset()-mv.fut.LogEndOffset(), 0)
			byDir[mv.root] = append(byDir[mv.root], api.LogDirPartition{Topic: r.topic, Partition: r.index, Size: mv.fut.Size(), OffsetLag: lag, IsFuture: true})
		}
	}
	out := make([]api.LogDirDescription, 0, len(p.dirs.roots))
	for _, root := range p.dirs.roots {
		d := api.LogDirDescription{Dir: root, TotalBytes: -1, UsableBytes: -1, Partitions: byDir[root]}
		if sp, err := p.n.fs.Space(root); err == nil {
			d.TotalBytes, d.UsableBytes = sp.Total, sp.Free
		}
		slices.SortStableFunc(d.Partitions, func(a, b api.LogDirPartition) int {
			if a.Topic != b.Topic {
				return strings.Compare(a.Topic, b.Topic)
			}
			return int(a.Partition - b.Partition)
		})
		out = append(out, d)
	}
	return out
}

// alterReplicaLogDir serves one partition of AlterReplicaLogDirs, as
// node's: logmove.Decide, then the cancel and the start it asks for.
func (p *process) alterReplicaLogDir(topic string, index int32, dir string) error {
	root := ""
	if slices.Contains(p.dirs.roots, dir) {
		root = dir
	}
	rq := logmove.Replica{DirKnown: root != "", DirOnline: root != ""}
	name := topic + "-" + strconv.Itoa(int(index))
	var r *replica
	if t, ok := p.image.Topic(topic); ok && index >= 0 && int(index) < len(t.Partitions) {
		rq.Exists = true
		r = p.parts[partKey{t.ID, index}]
	}
	if r != nil {
		rq.Hosted, rq.CurrentDir = true, rootOf(r)
		if mv := p.dirs.moves[r]; mv != nil {
			rq.FutureDir = mv.root
		}
	}
	out := logmove.Decide(rq, root)
	if out.Prefer {
		p.dirs.preferred[name] = out.Dir
	}
	if err := api.LogMoveError(out, name, dir, p.n.id); err != nil {
		return err
	}
	if out.Cancel {
		p.cancelMove(r, "cancelled by a request")
	}
	if out.Dir == rq.CurrentDir {
		// Back to where it is: whatever move was asked before is off.
		p.n.c.onLogDirMoveCancelled(p.n, r)
	}
	if out.Start {
		if err := p.startMove(r, out.Dir); err != nil {
			return fmt.Errorf("%w: %w", kerr.KafkaStorageError, err)
		}
	}
	return nil
}

// startMove creates r's future log in root and starts its copier.
func (p *process) startMove(r *replica, root string) error {
	p.n.moveSeq++
	dir := storage.FutureDir(root, r.name(), fmt.Sprintf("m%d", p.n.moveSeq))
	if err := p.n.fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := p.n.fs.SyncDir(root); err != nil {
		p.n.fs.RemoveAll(dir)
		return fmt.Errorf("sync %s: %w", root, err)
	}
	fut, err := storage.Open(p.n.fs, dir, r.log.Config(), storage.Options{Logger: p.log})
	if err == nil {
		if err = fut.TruncateFullyAndStartAt(r.log.LogStartOffset()); err != nil {
			fut.Close()
		}
	}
	if err != nil {
		p.n.fs.RemoveAll(dir)
		return fmt.Errorf("create future log %s: %w", dir, err)
	}
	p.n.tracef("moves %s from %s to %s", r.name(), rootOf(r), root)
	p.n.c.onLogDirMoveStarted(p.n, r, root)
	p.runMove(r, root, fut)
	return nil
}

func (p *process) runMove(r *replica, root string, fut *storage.Log) {
	mv := &logDirMove{r: r, root: root, fut: fut}
	p.dirs.moves[r] = mv
	p.n.after(moveStepDelay, func() { p.stepMove(mv) })
}

// cancelMove stops r's move, if any, and deletes its future log.
func (p *process) cancelMove(r *replica, why string) {
	mv := p.dirs.moves[r]
	if mv == nil {
		return
	}
	delete(p.dirs.moves, r)
	dir := mv.fut.Dir()
	mv.fut.Close()
	if err := p.deleteDir(dir); err != nil {
		p.n.tracef("future log %s not removed: %v", dir, err)
	}
	p.n.tracef("move of %s to %s %s", r.name(), mv.root, why)
}

// stepMove is one event of node's copyAndSwap: one copy step while the
// partition's appends go on or, once close behind, the paused last
// stretch and the swap.
func (p *process) stepMove(mv *logDirMove) {
	r := mv.r
	if p.dirs.moves[r] != mv {
		return // cancelled
	}
	src, fut := r.log, mv.fut
	paused := false
	for range maxPausedSteps {
		prog := storage.MoveProgress(src, fut, paused)
		prog.MaxPausedOffsets, prog.MaxPausedBytes = movePausedOffsets, movePausedBytes
		st := logmove.Next(prog)
		switch st.Kind {
		case logmove.Pause:
			paused = true
			continue
		case logmove.Release:
			p.n.after(moveStepDelay, func() { p.stepMove(mv) })
			return
		}
		limit := moveCopyBytes
		if paused {
			limit = 1 << 20
		}
		var restore func()
		if st.Kind == logmove.Swap {
			restore = p.n.c.faults.powerCutDuringSwap(p.n)
		}
		_, swapped, retired, err := storage.ApplyMoveStep(src, fut, st, limit)
		if restore != nil {
			restore()
			if p.n.proc != p {
				return // the machine lost power mid-swap: the restart repairs
			}
		}
		if err != nil {
			p.failMove(mv, err)
			return
		}
		if swapped {
			delete(p.dirs.moves, r)
			if retired != "" {
				if err := p.n.fs.RemoveAll(retired); err != nil {
					p.n.tracef("superseded log %s not removed: %v", retired, err)
				}
			}
			p.n.tracef("moved %s to %s (log end %d)", r.name(), src.Dir(), src.LogEndOffset())
			p.n.c.onLogDirMoveEnded(p.n, r, logDirMoveCompleted)
			return
		}
		if !paused {
			p.n.after(moveStepDelay, func() { p.stepMove(mv) })
			return
		}
	}
	p.n.c.violation("%s: the paused stretch of the move of %s took %d steps", p.n, r.name(), maxPausedSteps)
}

// errPowerCut fails the filesystem calls of a machine that lost power.
var errPowerCut = errors.New("the machine lost power")

// powerCutDuringSwap, in runs with power losses, cuts a machine's power at
// one of the filesystem calls of a swap now and then (the swap runs within
// one event, so a power loss between events never lands inside it): the
// restart's storage.RecoverMoves then finishes a decided swap or keeps
// the future of an undecided one. It returns what undoes its hook, nil
// when it does not cut.
func (f *faultState) powerCutDuringSwap(n *node) (restore func()) {
	c := f.c
	if !c.opts.Faults.PowerLoss || c.healed || c.stopped || !c.s.chance(0.2) {
		return nil
	}
	at, torn := 1+c.s.rng.IntN(30), c.s.chance(0.5)
	calls, cut := 0, false
	n.fs.SetFault(func(op vfs.Op, path string) error {
		if cut {
			return errPowerCut
		}
		if calls++; calls < at {
			return nil
		}
		cut = true
		c.check.stats.Crashes++
		c.check.stats.LogDirSwapPowerCuts++
		n.tracef("FAULT power loss during a swap, before %s %s", op, path)
		f.powerLost = true
		n.crash(torn)
		f.restartLater(n)
		return errPowerCut
	})
	return func() { n.fs.SetFault(nil) }
}

// failMove is node's runLogMove after an error: the future log is deleted,
// the current one was authoritative all along.
func (p *process) failMove(mv *logDirMove, err error) {
	p.cancelMove(mv.r, fmt.Sprintf("failed: %v", err))
	p.n.c.onLogDirMoveEnded(p.n, mv.r, logDirMoveFailed)
}

// reopenMove is node's maybeResumeLogMove for a replica just opened.
func (p *process) reopenMove(r *replica) {
	if len(p.dirs.roots) == 1 {
		return
	}
	name := r.name()
	root, ok := p.dirs.preferred[name]
	delete(p.dirs.preferred, name)
	kept, hasKept := p.dirs.kept[name]
	delete(p.dirs.kept, name)
	p.n.c.onLogDirReplicaOpened(p.n, r)
	act := logmove.Reopen(logmove.Opened{Preferred: root, HasPreferred: ok, CurrentDir: rootOf(r),
		Kept: kept, HasKept: hasKept, Blocked: p.dirs.moves[r] != nil})
	if act.Resume {
		fut, err := storage.Open(p.n.fs, kept, r.log.Config(), storage.Options{Logger: p.log})
		var from int64
		if err == nil {
			if from, err = r.log.ResumeFuture(fut); err != nil {
				fut.Close()
			}
		}
		if err == nil {
			p.n.tracef("resumes the move of %s to %s from %d (log end %d)", name, act.Dir, from, r.log.LogEndOffset())
			p.n.c.check.stats.LogDirMovesResumed++
			p.runMove(r, act.Dir, fut)
			return
		}
		p.n.tracef("kept future log %s of %s not kept: %v", kept, name, err)
		act.DiscardKept, act.Start = true, true
	}
	if act.DiscardKept {
		if err := p.deleteDir(kept); err != nil {
			p.n.tracef("future log %s not removed: %v", kept, err)
		}
	}
	if act.Start {
		if err := p.startMove(r, act.Dir); err != nil {
			p.n.tracef("interrupted move of %s not resumed: %v", name, err)
		}
	}
}

// --- the operator ---

// nextLogDirMove has the operator move a replica between directories
// every 0.1-1 s of the faulty phase, beside the other faults.
func (f *faultState) nextLogDirMove() {
	c := f.c
	if c.healed || c.stopped {
		return
	}
	c.s.after(c.s.between(100*time.Millisecond, time.Second), f.nextLogDirMove)
	f.logDirMove()
}

// logDirMove plays an operator (kafka-reassign-partitions with log_dirs,
// kadm's AlterReplicaLogDirs): asks a node for its directories
// (DescribeLogDirs), then to move one of its replicas, a leader's or a
// follower's, to another of them, or, for one moving, at times back to
// where it is (a cancel). Both cross the network to the API handlers.
func (f *faultState) logDirMove() {
	c := f.c
	to := c.ids[c.s.rng.IntN(len(c.ids))]
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	c.call(logDirOpEndpoint, to, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			return
		}
		f.alterLogDir(to, resp.(*kmsg.DescribeLogDirsResponse))
	})
}

func (f *faultState) alterLogDir(to int32, resp *kmsg.DescribeLogDirsResponse) {
	c := f.c
	type placed struct {
		topic     string
		index     int32
		dir       string
		hasFuture bool
	}
	var replicas []placed
	var dirs []string
	moving := map[string]bool{}
	for _, d := range resp.Dirs {
		if d.ErrorCode != 0 {
			continue
		}
		dirs = append(dirs, d.Dir)
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				key := t.Topic + "-" + strconv.Itoa(int(p.Partition))
				if p.IsFuture {
					moving[key] = true
				} else {
					replicas = append(replicas, placed{topic: t.Topic, index: p.Partition, dir: d.Dir})
				}
			}
		}
	}
	if len(replicas) == 0 || len(dirs) < 2 {
		return
	}
	pick := replicas[c.s.rng.IntN(len(replicas))]
	pick.hasFuture = moving[pick.topic+"-"+strconv.Itoa(int(pick.index))]
	dest := pick.dir
	if !pick.hasFuture || !c.s.chance(0.25) {
		others := slices.DeleteFunc(slices.Clone(dirs), func(d string) bool { return d == pick.dir })
		dest = others[c.s.rng.IntN(len(others))]
	}
	c.check.stats.LogDirRequests++
	c.tracef("OP move n%d's replica of %s-%d from %s to %s (moving: %v)", to, pick.topic, pick.index, pick.dir, dest, pick.hasFuture)
	c.sendAlterLogDir(to, pick.topic, pick.index, dest, func(err error) {
		if err != nil || !c.opts.Faults.LogDirSecondThoughts || c.healed || c.stopped || !c.s.chance(0.3) {
			return
		}
		// Second thoughts, while the copy is likely still going: call
		// the move off (back to where the replica was) or send it to a
		// third directory.
		again := pick.dir
		others := slices.DeleteFunc(slices.Clone(dirs), func(d string) bool { return d == pick.dir || d == dest })
		if len(others) > 0 && c.s.chance(0.5) {
			again = others[c.s.rng.IntN(len(others))]
		}
		c.s.after(c.s.between(5*time.Millisecond, 60*time.Millisecond), func() {
			if c.healed || c.stopped {
				return
			}
			c.check.stats.LogDirRequests++
			c.tracef("OP second thoughts: move n%d's replica of %s-%d to %s instead", to, pick.topic, pick.index, again)
			c.sendAlterLogDir(to, pick.topic, pick.index, again, nil)
		})
	})
}

// sendAlterLogDir sends node to an AlterReplicaLogDirs for one partition
// from the operator's endpoint; then, if not nil, gets the partition's
// answer.
func (c *Cluster) sendAlterLogDir(to int32, topic string, index int32, dest string, then func(error)) {
	c.sendAlterLogDirFrom(logDirOpEndpoint, "OP", balancer.DirMove{Broker: to, Topic: topic, Partition: index, To: dest}, then)
}

// sendAlterLogDirFrom sends m.Broker the AlterReplicaLogDirs for m from
// endpoint from (the operator's, or the active controller's balancer).
func (c *Cluster) sendAlterLogDirFrom(from int32, who string, m balancer.DirMove, then func(error)) {
	c.call(from, m.Broker, ctrlcore.AlterLogDirRequest(m), rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			err = ctrlcore.AlterLogDirOutcome(resp.(*kmsg.AlterReplicaLogDirsResponse))
		}
		c.tracef("%s move of n%d's %s-%d to %s: %v", who, m.Broker, m.Topic, m.Partition, m.To, err)
		if then != nil {
			then(err)
		}
	})
}

// --- the checks ---

type logDirMoveEnd int

const (
	logDirMoveCompleted logDirMoveEnd = iota + 1
	logDirMoveFailed
)

// logDirWant is a move started and not ended: its destination, and
// whether it failed (to be asked again).
type logDirWant struct {
	dest    string
	failed  bool
	askedAt time.Duration // when the operator last asked again
}

// retryLogDirMoves plays the operator after healing: a move that failed
// (on an I/O error: a full disk) is asked for again, at most once a
// second, until it completes or the replica leaves the node.
func (c *Cluster) retryLogDirMoves() {
	for _, k := range c.pendingLogDirMoves() {
		w := c.check.logDirMoves[k]
		if !w.failed || w.askedAt > 0 && c.s.now-w.askedAt < time.Second {
			continue
		}
		p := c.nodes[k.node].proc
		if p == nil {
			continue
		}
		r := p.parts[k.part]
		if r == nil {
			continue
		}
		w.askedAt = c.s.now
		c.check.stats.LogDirRetries++
		c.tracef("OP ask n%d again to move %s to %s", k.node, r.name(), w.dest)
		c.sendAlterLogDir(k.node, r.topic, r.index, w.dest, nil)
	}
}

// pendingLogDirMoves are the moves started and not ended, in order.
func (c *Cluster) pendingLogDirMoves() []logDirKey {
	return slices.SortedFunc(maps.Keys(c.check.logDirMoves), func(a, b logDirKey) int {
		if a.node != b.node {
			return int(a.node - b.node)
		}
		return comparePartKeys(a.part, b.part)
	})
}

// logDirKey is one node's replica of one partition.
type logDirKey struct {
	node int32
	part partKey
}

// onLogDirMoveStarted records a move a node started (a request's, or one
// a restart could not resume into its kept future and started afresh):
// it must end.
func (c *Cluster) onLogDirMoveStarted(n *node, r *replica, root string) {
	if c.check.logDirMoves == nil {
		c.check.logDirMoves = map[logDirKey]*logDirWant{}
	}
	k := logDirKey{n.id, partKey{r.id, r.index}}
	if w, ok := c.check.logDirMoves[k]; ok && !w.failed {
		c.check.stats.LogDirMovesRedirected++ // replaced by this one
	}
	c.check.logDirMoves[k] = &logDirWant{dest: root}
	c.check.stats.LogDirMoves++
}

// onLogDirMoveEnded: a move completed (swapped) or failed (an I/O error:
// the replica stays where it was, as node's).
func (c *Cluster) onLogDirMoveEnded(n *node, r *replica, end logDirMoveEnd) {
	k := logDirKey{n.id, partKey{r.id, r.index}}
	want, ok := c.check.logDirMoves[k]
	if !ok {
		return
	}
	switch end {
	case logDirMoveCompleted:
		if got := rootOf(r); got != want.dest {
			c.violation("%s: the move of %s to %s ended in %s", n, r.name(), want.dest, got)
		}
		c.check.stats.LogDirMovesDone++
		delete(c.check.logDirMoves, k)
	case logDirMoveFailed:
		// Left for the operator to ask again once healed
		// (retryLogDirMoves): it must then complete.
		c.check.stats.LogDirMovesFailed++
		want.failed = true
	}
}

// onLogDirMoveCancelled: a request moved the replica back (or elsewhere:
// the new move is recorded after).
func (c *Cluster) onLogDirMoveCancelled(n *node, r *replica) {
	k := logDirKey{n.id, partKey{r.id, r.index}}
	if _, ok := c.check.logDirMoves[k]; ok {
		delete(c.check.logDirMoves, k)
		c.check.stats.LogDirMovesCancelled++
	}
}

// onLogDirMoveAbandoned: the replica left the node (reassigned away, its
// topic deleted) with a move asked for and not ended.
func (c *Cluster) onLogDirMoveAbandoned(n *node, r *replica) {
	k := logDirKey{n.id, partKey{r.id, r.index}}
	if _, ok := c.check.logDirMoves[k]; ok {
		delete(c.check.logDirMoves, k)
		c.check.stats.LogDirMovesAbandoned++
	}
}

// onLogDirReplicaOpened: a replica a restart opened in the destination of
// its move was swapped in by the restart (a swap decided before a crash,
// finished by storage.RecoverMoves).
func (c *Cluster) onLogDirReplicaOpened(n *node, r *replica) {
	k := logDirKey{n.id, partKey{r.id, r.index}}
	if w, ok := c.check.logDirMoves[k]; ok && w.dest == rootOf(r) {
		delete(c.check.logDirMoves, k)
		c.check.stats.LogDirMovesDone++
		c.check.stats.LogDirSwapsFinishedAtStart++
	}
}

// logDirConvergence: after healing, no move runs and no future log is
// waiting for its replica to open.
func (c *Cluster) logDirConvergence() string {
	for _, id := range c.ids {
		p := c.nodes[id].proc
		for _, r := range p.partitionList() {
			if mv := p.dirs.moves[r]; mv != nil {
				return fmt.Sprintf("n%d moves %s to %s: future at %d of %d", id, r.name(), mv.root, mv.fut.LogEndOffset(), r.log.LogEndOffset())
			}
		}
	}
	for _, k := range c.pendingLogDirMoves() {
		w := c.check.logDirMoves[k]
		if r := c.nodes[k.node].proc.parts[k.part]; w.failed && r != nil {
			return fmt.Sprintf("n%d's move of %s to %s failed; the operator asks again", k.node, r.name(), w.dest)
		}
	}
	return ""
}

// finalLogDirs: every move that started ended (completed, failed, or
// abandoned because the replica left the node; one a crash interrupted
// has been finished or resumed and completed), every replica is in
// exactly one directory, the one its log is open in, no future log nor
// superseded log is left, and DescribeLogDirs says where each replica is.
func (k *checker) finalLogDirs() {
	c := k.c
	for _, key := range c.pendingLogDirMoves() {
		want := k.logDirMoves[key].dest
		p := c.nodes[key.node].proc
		r := p.parts[key.part]
		switch {
		case r == nil:
			k.stats.LogDirMovesAbandoned++
		default:
			c.violation("n%d: the move of %s to %s never ended: it is in %s", key.node, r.name(), want, rootOf(r))
		}
	}
	for _, id := range c.ids {
		n := c.nodes[id]
		p := n.proc
		found := map[string][]string{} // partition name -> roots holding it
		for _, root := range p.dirs.roots {
			entries, err := n.fs.ReadDir(root)
			if err != nil {
				c.violation("%s: list %s: %v", n, root, err)
				continue
			}
			for _, e := range entries {
				switch {
				case !e.IsDir || e.Name == metadataDir:
				case strings.HasSuffix(e.Name, storage.FutureDirSuffix):
					c.violation("%s: future log %s/%s left after healing", n, root, e.Name)
				case strings.HasSuffix(e.Name, "-delete"):
					c.violation("%s: superseded log %s/%s left after healing", n, root, e.Name)
				default:
					found[e.Name] = append(found[e.Name], root)
				}
			}
		}
		described := map[string]string{}
		for _, d := range p.describeLogDirs() {
			for _, dp := range d.Partitions {
				name := dp.Topic + "-" + strconv.Itoa(int(dp.Partition))
				if dp.IsFuture {
					c.violation("%s: DescribeLogDirs lists a future log of %s in %s after healing", n, name, d.Dir)
					continue
				}
				if prev, ok := described[name]; ok {
					c.violation("%s: DescribeLogDirs lists %s in %s and %s", n, name, prev, d.Dir)
				}
				described[name] = d.Dir
			}
		}
		for _, r := range p.partitionList() {
			roots := found[r.name()]
			if len(roots) != 1 || roots[0] != rootOf(r) {
				c.violation("%s: %s is open in %s but on disk in %v", n, r.name(), r.log.Dir(), roots)
			}
			if described[r.name()] != rootOf(r) {
				c.violation("%s: DescribeLogDirs puts %s in %q, its log is in %s", n, r.name(), described[r.name()], rootOf(r))
			}
		}
	}
}
