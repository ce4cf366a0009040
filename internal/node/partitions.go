package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/logmove"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// partitionMetadataFile records which topic id a partition directory
// belongs to, so a directory left behind by a deleted topic is never mixed
// up with a new topic of the same name.
const partitionMetadataFile = "partition.metadata"

// reconcilePartitions opens the replicas this broker holds in the current
// image, closes the ones it no longer holds or that were deleted, and gives
// each the role the image decides (metadata.Image.ReplicaRole: none until
// the image holds this incarnation's registration, so a restarted broker
// never leads or follows on its stale replay). Called after every metadata
// change, on the reconcile goroutine, the only one that changes b.parts
// while the broker runs.
func (b *Broker) reconcilePartitions() error {
	im := b.Image()
	// The epoch is read once, with the image: the roles come from this
	// image and this registration together, never from an older image
	// with a registration that arrived while it was being applied.
	epoch := b.brokerEpoch.Load()
	type assignment struct {
		t *metadata.Topic
		p metadata.Partition
	}
	// Only what changed since the last reconciled image is visited
	// (metadata.Reconciled); the replicas of every other partition are
	// already in line with it.
	changes := b.reconciledImage.Changes(im, b.cfg.NodeID, epoch)
	want := map[partKey]assignment{}
	// gone lists the open replicas to check for removal.
	var gone []partKey
	b.partsMu.RLock()
	if changes.Full {
		for _, t := range im.Topics() {
			for _, p := range t.Partitions {
				if slices.Contains(p.Replicas, b.cfg.NodeID) {
					want[partKey{t.ID, p.Index}] = assignment{t, p}
				}
			}
		}
		for k := range b.parts {
			gone = append(gone, k)
		}
	} else {
		for _, c := range changes.Partitions {
			k := partKey{c.Topic.ID, c.Partition.Index}
			if slices.Contains(c.Partition.Replicas, b.cfg.NodeID) {
				want[k] = assignment{c.Topic, c.Partition}
			} else {
				gone = append(gone, k)
			}
		}
		if len(changes.Removed) > 0 {
			removed := map[metadata.TopicID]bool{}
			for _, id := range changes.Removed {
				removed[id] = true
			}
			for k := range b.parts {
				if removed[k.topic] {
					gone = append(gone, k)
				}
			}
		}
	}
	b.partsMu.RUnlock()
	var errs []error
	type removal struct {
		k partKey
		p *partition
	}
	var removed []removal
	b.partsMu.Lock()
	for _, k := range gone {
		if p, ok := b.parts[k]; ok && !im.Lists(b.cfg.NodeID, k.topic, k.index) {
			delete(b.parts, k)
			removed = append(removed, removal{k, p})
		}
	}
	// A replica left closed for the open-files limit that the image no
	// longer assigns here (deleted, reassigned away) is no longer this
	// broker's to report: it is not in gone, which lists open replicas
	// only, so all of them are checked (a few thousand at most).
	for k := range b.closedForFiles {
		if !im.Lists(b.cfg.NodeID, k.topic, k.index) {
			delete(b.closedForFiles, k)
		}
	}
	b.partsMu.Unlock()
	for _, r := range removed {
		p := r.p
		if err := p.close(); err != nil {
			errs = append(errs, err)
		}
		if !b.holdsReplicaOf(im, p.topic) {
			// The topic's series go only with its last replica here: a
			// reassignment may move one partition away and keep others.
			b.metrics.DeleteTopic(p.topic)
		}
		// A replica the image no longer lists stops at once (it must not
		// go on leading or fetching), but its log is deleted only when
		// the image is caught up for this registration; otherwise it
		// stays on disk, to be opened again or swept below once it is.
		if !im.Retired(b.cfg.NodeID, epoch, r.k.topic, r.k.index) {
			b.log.Info("closed partition; its log is kept until this broker's metadata has caught up", "partition", p.name())
			continue
		}
		if err := b.deletePartitionDir(p.log.Dir()); err != nil {
			errs = append(errs, err)
		} else {
			b.log.Info("deleted partition", "partition", p.name())
		}
	}
	if im.CaughtUpFor(b.cfg.NodeID, epoch) && b.strayCheckedEpoch.Swap(epoch) != epoch {
		// Once per registration: what was retired while this broker was
		// down, or whose deletion a crash interrupted.
		if err := b.removeStrayPartitionDirs(im, epoch); err != nil {
			errs = append(errs, err)
		}
	}
	now := time.Now()
	// Log directories are counted once per reconcile, not once per new
	// partition (which made creating N partitions O(N²)).
	var dirs map[string]int
	configs := map[*metadata.Topic]config.TopicConfig{}
	type opening struct {
		k      partKey
		w      assignment
		cfg    config.TopicConfig
		dir    string
		create bool
		p      *partition
		err    error
	}
	var toOpen []*opening
	var toApply []partKey
	// closedForFiles are the replicas this reconcile leaves closed for
	// the open-files limit, notForFiles those it fails to open for
	// another reason (b.closedForFiles).
	var closedForFiles, notForFiles []partKey
	for k, w := range want {
		cfg, ok := configs[w.t]
		if !ok {
			var err error
			if cfg, err = b.topicConfig(w.t); err != nil {
				errs = append(errs, fmt.Errorf("config of %s: %w", w.t.Name, err))
				continue
			}
			configs[w.t] = cfg
		}
		if b.partition(k.topic, k.index) != nil {
			toApply = append(toApply, k)
			continue
		}
		if b.dirOffline() {
			continue // no replica is created while a log directory is offline; the broker is stopping
		}
		dir, err := b.findPartitionDir(w.t, w.p.Index)
		if err != nil {
			if isOutOfDescriptors(err) {
				closedForFiles = append(closedForFiles, k)
			} else {
				notForFiles = append(notForFiles, k)
			}
			errs = append(errs, err)
			continue
		}
		o := &opening{k: k, w: w, cfg: cfg, dir: dir}
		if dir == "" {
			if dirs == nil {
				dirs = b.logDirCounts()
			}
			// The directory AlterReplicaLogDirs asked for before the
			// replica was created (KIP-113), or the least loaded.
			pref, ok := b.logMoves.takePreferred(w.t.Name + "-" + strconv.Itoa(int(w.p.Index)))
			root := logmove.Place(b.cfg.LogDirs, dirs, pref, ok)
			dirs[root]++
			o.dir, o.create = filepath.Join(root, w.t.Name+"-"+strconv.Itoa(int(w.p.Index))), true
		}
		toOpen = append(toOpen, o)
	}
	toOpen, left := withinOpenFilesLimit(b, now, toOpen, func(o *opening) string { return o.w.t.Name + "-" + strconv.Itoa(int(o.w.p.Index)) }, &errs)
	for _, o := range left {
		closedForFiles = append(closedForFiles, o.k)
	}
	// New replicas are created and opened in parallel, without partsMu
	// (the partitions already open keep serving meanwhile). A new one is
	// created without an fsync of its own (its directory, partition.metadata
	// and segment file), and one syncfs(2) of each log directory they were
	// created in makes all of them durable before any is registered (and
	// so before any can take a write, be counted in sync or lead): a few
	// fsyncs per replica, one after another, made creating thousands of
	// partitions take minutes, and in parallel still most of the time.
	forEachParallel(toOpen, maxParallelOpens, func(o *opening) {
		if o.create {
			o.err = b.createPartitionDir(o.w.t, o.dir)
		}
		if o.err == nil {
			o.p, o.err = openPartition(b, o.w.t, o.w.p, o.cfg, o.dir, o.create)
		}
	})
	syncs := vfs.NewFSSyncs(b.fs)
	for _, o := range toOpen {
		if !o.create || o.err != nil {
			continue
		}
		root := filepath.Dir(o.dir)
		if err := syncs.Sync(root); err != nil {
			err = fmt.Errorf("sync the new partitions in %s: %w", root, err)
			// Never used: what it created may not be durable. The
			// next reconcile opens the directory again (synced as a
			// log found on disk).
			if cerr := o.p.close(); cerr != nil {
				b.log.Warn("closing a partition whose creation was not made durable", "partition", o.p.name(), "err", cerr)
			}
			o.p, o.err = nil, err
		}
	}
	var outOfFiles []string
	var outOfFilesErr error
	for _, o := range toOpen {
		if o.err != nil {
			name := o.w.t.Name + "-" + strconv.Itoa(int(o.w.p.Index))
			switch {
			case isOutOfDescriptors(o.err):
				// Not the disk's failure: the replica stays closed and
				// is tried again at the next reconcile.
				outOfFiles = append(outOfFiles, name)
				outOfFilesErr = o.err
				closedForFiles = append(closedForFiles, o.k)
				continue
			case isDeviceError(o.err):
				b.takeLogDirOffline(filepath.Dir(o.dir), name, o.err)
			}
			notForFiles = append(notForFiles, o.k)
			errs = append(errs, o.err)
			continue
		}
		b.partsMu.Lock()
		b.parts[o.k] = o.p
		delete(b.closedForFiles, o.k)
		b.partsMu.Unlock()
		toApply = append(toApply, o.k)
		b.maybeResumeLogMove(o.p)
	}
	b.partsMu.Lock()
	for _, k := range notForFiles {
		delete(b.closedForFiles, k)
	}
	for _, k := range closedForFiles {
		if b.closedForFiles == nil {
			b.closedForFiles = map[partKey]struct{}{}
		}
		b.closedForFiles[k] = struct{}{}
	}
	b.partsMu.Unlock()
	if len(outOfFiles) > 0 {
		// One error for all of them (logged by the caller), not one per
		// replica.
		_, limit, _ := b.openFiles()
		errs = append(errs, fmt.Errorf("%d replicas not opened, tried again at the next reconcile (%s first; a limit of %d): %w: %w",
			len(outOfFiles), outOfFiles[0], limit, errOpenFilesLimit, outOfFilesErr))
	}
	// Applied in parallel too: taking leadership writes the leader-epoch
	// checkpoint (an fsync), and a broker taking over thousands of
	// leaderships (another stopping) took tens of seconds one by one. A
	// stopping broker applies no more (its partitions are closing; the
	// next start reconciles from scratch).
	var mu sync.Mutex
	var stopped atomic.Bool
	forEachParallel(toApply, maxParallelOpens, func(k partKey) {
		select {
		case <-b.stop:
			stopped.Store(true)
			return
		default:
		}
		p := b.partition(k.topic, k.index)
		if p == nil {
			return // no longer open
		}
		w := want[k]
		if err := p.apply(w.p, im.ReplicaRole(b.cfg.NodeID, epoch, w.p), configs[w.t], now); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	if stopped.Load() {
		return errors.Join(errs...)
	}
	if len(errs) > 0 {
		// What failed is tried again with every partition next time.
		b.reconciledImage.Forget()
	} else {
		b.reconciledImage.Done(im, b.cfg.NodeID, epoch)
	}
	return errors.Join(errs...)
}

// withinOpenFilesLimit returns the first of toOpen that can be opened
// while descriptorReserve descriptors stay free (each new replica holds at
// least its active segment open), in name order, and the rest, which stay
// closed for this reconcile, reported in errs, to be tried again at the
// next one (fdlimit.go).
func withinOpenFilesLimit[T any](b *Broker, now time.Time, toOpen []T, name func(T) string, errs *[]error) (kept, left []T) {
	if len(toOpen) == 0 {
		return toOpen, nil
	}
	b.partsMu.RLock()
	replicas := len(b.parts)
	b.partsMu.RUnlock()
	open, limit, ok := b.openFilesEstimate(now, replicas, len(toOpen))
	if !ok {
		return toOpen, nil
	}
	reserve := descriptorReserve(limit)
	room := max(limit-reserve-open, 0)
	if len(toOpen) <= room {
		return toOpen, nil
	}
	slices.SortFunc(toOpen, func(x, y T) int { return strings.Compare(name(x), name(y)) })
	left = toOpen[room:]
	// Reported once, in the reconcile's error (logged by its caller).
	*errs = append(*errs, fmt.Errorf("%d replicas not opened, tried again at the next reconcile (%s first; %d files open of a limit of %d, %d kept free): %w",
		len(left), name(left[0]), open, limit, reserve, errOpenFilesLimit))
	return toOpen[:room], left
}

// holdsReplicaOf reports whether im still gives this broker a replica of
// the topic named name.
func (b *Broker) holdsReplicaOf(im *metadata.Image, name string) bool {
	t, ok := im.Topic(name)
	if !ok {
		return false
	}
	for _, p := range t.Partitions {
		if slices.Contains(p.Replicas, b.cfg.NodeID) {
			return true
		}
	}
	return false
}

// maxParallelOpens bounds the replicas one reconcile creates or opens at
// once, and those a stopping broker closes at once.
const maxParallelOpens = 64

// forEachParallel runs fn on every item, at most limit at a time, and
// returns when all are done: for work that mostly waits on the disk.
func forEachParallel[T any](items []T, limit int, fn func(T)) {
	var wg sync.WaitGroup
	work := make(chan T)
	for range min(len(items), limit) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				fn(it)
			}
		}()
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
}

// findPartitionDir finds the directory of a partition in log.dirs, ""
// when it has none. A directory of the same name that belongs to another
// topic id (a deleted topic whose files were not removed) is removed.
func (b *Broker) findPartitionDir(t *metadata.Topic, index int32) (string, error) {
	name := t.Name + "-" + strconv.Itoa(int(index))
	for _, root := range b.cfg.LogDirs {
		dir := filepath.Join(root, name)
		id, err := b.readPartitionTopicID(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil && id == t.ID {
			return dir, nil
		}
		if err != nil && !errors.Is(err, errBadPartitionMetadata) {
			// Not read (out of descriptors, an I/O error): no evidence
			// that the directory is another incarnation's, and it may
			// hold this one's data.
			return "", fmt.Errorf("read %s of %s: %w", partitionMetadataFile, dir, err)
		}
		b.log.Warn("removing partition directory of another topic incarnation", "dir", dir)
		if err := b.fs.RemoveAll(dir); err != nil {
			return "", fmt.Errorf("remove stale %s: %w", dir, err)
		}
	}
	return "", nil
}

// createPartitionDir creates the directory dir of a partition of t with
// its partition.metadata, none of it synced: the caller syncs the
// filesystem (once for all the partitions it creates there) before the
// partition is used. A crash before that leaves no directory, or one
// without partition.metadata (findPartitionDir sees none, and it is
// written again), one with a torn one (findPartitionDir removes the
// directory), or one with it whole, whose log opens as any other.
func (b *Broker) createPartitionDir(t *metadata.Topic, dir string) error {
	if err := b.fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := vfs.Create(b.fs, filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		return fmt.Errorf("create %s: %w", partitionMetadataFile, err)
	}
	content := "version: 0\ntopic_id: " + t.ID.String() + "\n"
	_, err = f.Write([]byte(content))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", partitionMetadataFile, err)
	}
	return nil
}

func (b *Broker) readPartitionTopicID(dir string) (metadata.TopicID, error) {
	data, err := vfs.ReadFile(b.fs, filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		if _, statErr := b.fs.Stat(dir); errors.Is(statErr, os.ErrNotExist) {
			return metadata.TopicID{}, os.ErrNotExist
		}
		return metadata.TopicID{}, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "topic_id: "); ok {
			id, err := metadata.ParseTopicID(strings.TrimSpace(v))
			if err != nil {
				return metadata.TopicID{}, fmt.Errorf("%s: %w: %w", dir, errBadPartitionMetadata, err)
			}
			return id, nil
		}
	}
	return metadata.TopicID{}, fmt.Errorf("%s: %w: no topic_id", dir, errBadPartitionMetadata)
}

// errBadPartitionMetadata is a partition.metadata read whole whose content
// names no topic id (torn by a crash while the partition was created, or
// not ours).
var errBadPartitionMetadata = errors.New("partition.metadata names no topic id")

// logDirCounts counts the open partitions in each log directory.
func (b *Broker) logDirCounts() map[string]int {
	counts := map[string]int{}
	for _, p := range b.partitionList() {
		counts[filepath.Dir(p.log.Dir())]++
	}
	return counts
}

// deletedDirSuffix marks a partition directory being deleted. A partition
// directory's name ends in its index (digits), so no live one ends so.
const deletedDirSuffix = "-delete"

// deletePartitionDir deletes a retired replica's directory crash-safely,
// as Kafka does: renamed first (atomic, made durable with the parent's
// fsync) to a name no partition has, then removed. A crash before the
// rename leaves the whole directory, still a partition's, which
// removeStrayPartitionDirs retires again; one after it leaves a name that
// is never opened as a partition and is swept. A half-deleted log is never
// opened: it could lack the leader-epoch checkpoint or older segments
// while looking whole.
func (b *Broker) deletePartitionDir(dir string) error {
	return storage.DeleteDir(b.fs, dir, strconv.FormatInt(time.Now().UnixNano(), 36))
}

// removeStrayPartitionDirs deletes partition directories im retires for
// this broker (metadata.Image.Retired: their topic was deleted, or they
// were reassigned away, while this broker was down) and the remains of
// deletions a crash interrupted, leaving alone the ones open here.
func (b *Broker) removeStrayPartitionDirs(im *metadata.Image, epoch int64) error {
	var errs []error
	for _, root := range b.cfg.LogDirs {
		entries, err := b.fs.ReadDir(root)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if !e.IsDir || e.Name == metadataDirName {
				continue
			}
			dir := filepath.Join(root, e.Name)
			if strings.HasSuffix(e.Name, deletedDirSuffix) {
				if err := b.fs.RemoveAll(dir); err != nil {
					errs = append(errs, err)
				}
				continue
			}
			id, err := b.readPartitionTopicID(dir)
			if err != nil {
				continue // not ours, or unreadable: leave it for an operator
			}
			topic, index, future, ok := storage.ParsePartitionDirName(e.Name)
			if !ok || b.partition(id, index) != nil || !im.Retired(b.cfg.NodeID, epoch, id, index) {
				continue
			}
			if future {
				// The future log a restart kept of a replica that
				// left this broker while it was down: its move was
				// abandoned, and the replica never opens here to
				// resume or discard it.
				b.log.Info("removing the future log of a replica this broker no longer holds", "dir", dir)
				b.logMoves.forgetKept(topic+"-"+strconv.Itoa(int(index)), dir)
			}
			b.log.Info("removing partition directory this broker no longer holds", "dir", dir)
			if err := b.deletePartitionDir(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
