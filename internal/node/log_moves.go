package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/logmove"
	"github.com/skein-log/skein/internal/replthrottle"
	"github.com/skein-log/skein/internal/storage"
)

// Moving partition replicas between this broker's log directories
// (AlterReplicaLogDirs, KIP-113). internal/logmove decides; here a
// goroutine per move copies the current log into a future log in the
// destination directory (storage.Log.CopyFrom), pauses the partition's
// appends (its lock, after the cleaner's: storage.Log.PauseCleaning) for
// the last stretch, and swaps (storage.Log.AdoptFuture). The copying of
// all moves together is held to replica.alter.log.dirs.io.max.bytes.per.second
// (a replthrottle.Bucket fed the wall clock). The partition and
// its *storage.Log stay the same objects throughout, so produce, fetch,
// the flusher, the cleaner and retention never see a closed log.

// maxPreferredDirs bounds the directories remembered for replicas not
// created yet (Kafka keeps them in memory the same way, unbounded).
const maxPreferredDirs = 100_000

// logMoves is the broker's moves under way and the directories preferred
// for replicas not hosted yet.
type logMoves struct {
	// reqMu serialises the requests' decisions and their starts and
	// cancels (an AlterReplicaLogDirs partition, a resumed move), so two
	// never start moves of one partition at once. Taken before mu.
	reqMu     sync.Mutex
	mu        sync.Mutex
	moves     map[*partition]*logMove
	preferred map[string]string // partition name -> log directory
	// kept holds the future logs a restart left, by partition name
	// (storage.RecoverMoves), until the partition opens and its move
	// resumes into it.
	kept map[string]string

	// throttleMu guards throttle: the bytes per second all moves copy
	// together (replica.alter.log.dirs.io.max.bytes.per.second).
	throttleMu sync.Mutex
	throttle   *replthrottle.Bucket
}

func newLogMoves() *logMoves {
	return &logMoves{moves: map[*partition]*logMove{}, preferred: map[string]string{}, kept: map[string]string{},
		throttle: replthrottle.NewBucket(replthrottle.Unlimited)}
}

// maxThrottleWait bounds one wait of a throttled copier.
const maxThrottleWait = 100 * time.Millisecond

// copyAllowance is how many bytes a move may copy now at rate (the
// broker's replica.alter.log.dirs.io.max.bytes.per.second as the image
// gives it, applied at once when it changes), or how long to wait first.
func (m *logMoves) copyAllowance(rate int64, now time.Time) (bytes int, wait time.Duration) {
	m.throttleMu.Lock()
	defer m.throttleMu.Unlock()
	if rate != m.throttle.Rate() {
		m.throttle.SetRate(rate)
	}
	if ms := m.throttle.WaitMs(now.UnixMilli()); ms > 0 {
		// Asked again at least this often, so a new rate (a debt at a
		// low one lasts long) applies at once.
		return 0, min(time.Duration(ms)*time.Millisecond, maxThrottleWait)
	}
	n, _ := m.throttle.Allowance(now.UnixMilli())
	return n, 0
}

// copied counts n bytes a move copied at now.
func (m *logMoves) copied(n int, now time.Time) {
	m.throttleMu.Lock()
	defer m.throttleMu.Unlock()
	m.throttle.Take(n, now.UnixMilli())
}

// logMove is one move under way.
type logMove struct {
	p      *partition
	root   string // the destination log directory
	fut    *storage.Log
	cancel chan struct{}
	done   chan struct{}
}

// takePreferred returns (and forgets) the directory an AlterReplicaLogDirs
// asked for partition name before it was created here.
func (m *logMoves) takePreferred(name string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.preferred[name]
	delete(m.preferred, name)
	return d, ok
}

// forgetKept forgets the future log dir a restart kept for partition
// name, and the move it would have resumed.
func (m *logMoves) forgetKept(name, dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kept[name] == dir {
		delete(m.kept, name)
		delete(m.preferred, name)
	}
}

func (m *logMoves) of(p *partition) *logMove {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.moves[p]
}

func (m *logMoves) list() []*logMove {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*logMove, 0, len(m.moves))
	for _, mv := range m.moves {
		out = append(out, mv)
	}
	return out
}

// logDirRoot maps a directory named in a request to the configured log
// directory it is ("" if none): Kafka compares absolute paths.
func (b *Broker) logDirRoot(dir string) string {
	want := filepath.Clean(dir)
	if abs, err := filepath.Abs(want); err == nil {
		want = abs
	}
	for _, d := range b.cfg.LogDirs {
		c := filepath.Clean(d)
		abs, err := filepath.Abs(c)
		if err != nil {
			abs = c
		}
		if abs == want || c == want {
			return c
		}
	}
	return ""
}

// alterReplicaLogDir serves one partition of AlterReplicaLogDirs.
func (b *Broker) alterReplicaLogDir(topic string, index int32, dir string) error {
	b.logMoves.reqMu.Lock()
	defer b.logMoves.reqMu.Unlock()
	root := b.logDirRoot(dir)
	var offline string
	if d := b.offlineDir.Load(); d != nil {
		offline = filepath.Clean(*d)
	}
	r := logmove.Replica{DirKnown: root != "", DirOnline: root != "" && root != offline, AnyDirOffline: offline != ""}
	name := topic + "-" + strconv.Itoa(int(index))
	var p *partition
	if t, ok := b.Image().Topic(topic); ok && index >= 0 && int(index) < len(t.Partitions) {
		r.Exists = true
		p = b.partition(t.ID, index)
	}
	if p != nil {
		r.Hosted = true
		r.HostedOffline = p.offline.Load()
		r.CurrentDir = filepath.Dir(p.log.Dir())
		if mv := b.logMoves.of(p); mv != nil {
			r.FutureDir = mv.root
		}
	}
	out := logmove.Decide(r, root)
	if out.Prefer {
		b.logMoves.mu.Lock()
		if _, ok := b.logMoves.preferred[name]; ok || len(b.logMoves.preferred) < maxPreferredDirs {
			b.logMoves.preferred[name] = out.Dir
		}
		b.logMoves.mu.Unlock()
	}
	if err := api.LogMoveError(out, name, dir, b.cfg.NodeID); err != nil {
		return err
	}
	if out.Cancel {
		b.cancelLogMove(p)
	}
	if out.Start {
		if err := b.startLogMove(p, out.Dir); err != nil {
			return fmt.Errorf("%w: %w", kerr.KafkaStorageError, err)
		}
	}
	return nil
}

// startLogMove creates the future log of p in root and starts its copier.
func (b *Broker) startLogMove(p *partition, root string) error {
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return fmt.Errorf("move id: %w", err)
	}
	dir := storage.FutureDir(root, p.name(), hex.EncodeToString(raw[:]))
	t, ok := b.Image().TopicByID(p.id)
	if !ok {
		return kerr.UnknownTopicOrPartition
	}
	// partition.metadata first, so that once renamed into place the
	// directory is a partition's like any other.
	if err := b.createPartitionDir(t, dir); err != nil {
		return err
	}
	if err := b.fs.SyncDir(root); err != nil {
		return fmt.Errorf("sync %s: %w", root, err)
	}
	fut, err := storage.Open(b.fs, dir, p.log.Config(), storage.Options{Logger: b.logger(loggerPartition)})
	if err == nil {
		err = fut.TruncateFullyAndStartAt(p.log.LogStartOffset())
		if err != nil {
			fut.Close()
		}
	}
	if err != nil {
		b.fs.RemoveAll(dir)
		return fmt.Errorf("create future log %s: %w", dir, err)
	}
	b.log.Info("moving partition to another log directory", "partition", p.name(), "from", filepath.Dir(p.log.Dir()), "to", root)
	b.runLogMoveInto(p, root, fut)
	return nil
}

// runLogMoveInto starts the copier of p's move into fut, in root.
func (b *Broker) runLogMoveInto(p *partition, root string, fut *storage.Log) {
	mv := &logMove{p: p, root: root, fut: fut, cancel: make(chan struct{}), done: make(chan struct{})}
	b.logMoves.mu.Lock()
	b.logMoves.moves[p] = mv
	b.logMoves.mu.Unlock()
	b.bgWG.Add(1)
	go func() {
		defer b.bgWG.Done()
		b.runLogMove(mv)
	}()
}

// cancelLogMove stops p's move, if any, and deletes its future log.
func (b *Broker) cancelLogMove(p *partition) {
	mv := b.logMoves.of(p)
	if mv == nil {
		return
	}
	close(mv.cancel)
	<-mv.done
}

var errMoveCancelled = errors.New("log move cancelled")

// runLogMove runs one move to its end: swapped, cancelled, the broker
// stopping, or failed (the future log is then deleted; the current log
// was authoritative all along).
func (b *Broker) runLogMove(mv *logMove) {
	defer close(mv.done)
	retired, err := b.copyAndSwap(mv)
	b.logMoves.mu.Lock()
	delete(b.logMoves.moves, mv.p)
	b.logMoves.mu.Unlock()
	if err == nil {
		b.log.Info("moved partition to another log directory", "partition", mv.p.name(), "dir", mv.p.log.Dir())
		if retired != "" {
			if err := b.fs.RemoveAll(retired); err != nil {
				b.log.Warn("superseded log not removed; it is at the next start", "dir", retired, "err", err)
			}
		}
		return
	}
	dir := mv.fut.Dir()
	mv.fut.Close()
	select {
	case <-b.stop:
		// Left for the next start, which resumes the move into it
		// (storage.RecoverMoves, maybeResumeLogMove).
		return
	default:
	}
	if !errors.Is(err, errMoveCancelled) {
		b.log.Warn("log move failed; the partition stays where it was", "partition", mv.p.name(), "to", mv.root, "err", err)
	}
	b.removeKeptFuture(dir)
}

// copyAndSwap steps logmove.Next until the swap.
func (b *Broker) copyAndSwap(mv *logMove) (string, error) {
	src, fut, p := mv.p.log, mv.fut, mv.p
	paused := false
	pause := func() {
		src.PauseCleaning()
		p.mu.Lock()
		paused = true
	}
	release := func() {
		if paused {
			p.mu.Unlock()
			src.ResumeCleaning()
			paused = false
		}
	}
	defer release()
	for {
		select {
		case <-mv.cancel:
			return "", errMoveCancelled
		case <-b.stop:
			return "", errMoveCancelled
		default:
		}
		if paused && p.core.Closed() {
			return "", fmt.Errorf("%s closed", p.name())
		}
		st := logmove.Next(storage.MoveProgress(src, fut, paused))
		limit := 1 << 20
		switch st.Kind {
		case logmove.Pause:
			pause()
			continue
		case logmove.Release:
			release()
			continue
		case logmove.Copy:
			if !paused {
				// Throttled while the partition's appends go on; the
				// paused last stretch is bounded (logmove.PauseLagOffsets,
				// PauseLagBytes) and only counted, so a produce never
				// waits on the throttle.
				allowed, wait := b.logMoves.copyAllowance(config.AlterLogDirsRate(b.cfg, b.Image()), time.Now())
				if wait > 0 {
					select {
					case <-mv.cancel:
						return "", errMoveCancelled
					case <-b.stop:
						return "", errMoveCancelled
					case <-time.After(wait):
					}
					continue
				}
				limit = min(limit, allowed)
			}
		}
		n, swapped, retired, err := storage.ApplyMoveStep(src, fut, st, limit)
		if n > 0 {
			b.logMoves.copied(n, time.Now())
		}
		if err != nil || swapped {
			return retired, err
		}
	}
}

// maybeResumeLogMove goes on, for a partition just opened, with the move a
// restart interrupted: into the future log it left, as far as that is a
// prefix of the current log (storage.Log.ResumeFuture), or from the start.
func (b *Broker) maybeResumeLogMove(p *partition) {
	b.logMoves.reqMu.Lock()
	defer b.logMoves.reqMu.Unlock()
	b.logMoves.mu.Lock()
	root, ok := b.logMoves.preferred[p.name()]
	delete(b.logMoves.preferred, p.name())
	keptDir, kept := b.logMoves.kept[p.name()]
	delete(b.logMoves.kept, p.name())
	b.logMoves.mu.Unlock()
	act := logmove.Reopen(logmove.Opened{Preferred: root, HasPreferred: ok, CurrentDir: filepath.Dir(p.log.Dir()),
		Kept: keptDir, HasKept: kept, Blocked: b.dirOffline() || b.logMoves.of(p) != nil})
	if act.Resume {
		fut, from, err := b.resumeFuture(p, keptDir)
		if err == nil {
			b.log.Info("resuming an interrupted move to another log directory", "partition", p.name(), "to", act.Dir, "from_offset", from, "log_end", p.log.LogEndOffset())
			b.runLogMoveInto(p, act.Dir, fut)
			return
		}
		b.log.Warn("future log of an interrupted move not kept; copying again from the start", "dir", keptDir, "err", err)
		act.DiscardKept, act.Start = true, true
	}
	if act.DiscardKept {
		b.removeKeptFuture(keptDir)
	}
	if act.Start {
		if err := b.startLogMove(p, act.Dir); err != nil {
			b.log.Warn("interrupted log move not resumed", "partition", p.name(), "to", act.Dir, "err", err)
		}
	}
}

// resumeFuture opens the future log dir a restart left for p and readies
// it for the copy to go on (from the returned offset).
func (b *Broker) resumeFuture(p *partition, dir string) (*storage.Log, int64, error) {
	// Of this very partition: not of a topic of the same name deleted
	// (and created again) while the broker was down.
	id, err := b.readPartitionTopicID(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", dir, err)
	}
	if id != p.id {
		return nil, 0, fmt.Errorf("%s is of topic id %s, the partition's is %s", dir, id, p.id)
	}
	fut, err := storage.Open(b.fs, dir, p.log.Config(), storage.Options{Logger: b.logger(loggerPartition)})
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", dir, err)
	}
	from, err := p.log.ResumeFuture(fut)
	if err != nil {
		fut.Close()
		return nil, 0, err
	}
	return fut, from, nil
}

// removeKeptFuture deletes the future log dir of a move cancelled, failed
// or not resumed, crash-safely (storage.DeleteDir): a removal a power cut
// undid would have the next start resume the move, undoing a cancel or
// resuming a stale copy instead of a newer move (found by the simulator,
// TestLogDirSeeds seed 271).
func (b *Broker) removeKeptFuture(dir string) {
	if err := storage.DeleteDir(b.fs, dir, strconv.FormatInt(time.Now().UnixNano(), 36)); err != nil {
		b.log.Warn("future log not removed; it is at the next start", "dir", dir, "err", err)
	}
}
