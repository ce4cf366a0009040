package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// diskFullBytes is the file size limit a disk-full fault sets: segments
// already past it cannot grow, every append to them fails with EFBIG, as
// appends fail with ENOSPC on a full disk. The verify cluster rolls
// segments at segmentBytes, well above it, so an active segment
// soon passes it.
const diskFullBytes = 32 << 10

// diskFullFor makes broker s.broker's files unable to grow for s.hold, by
// lowering its RLIMIT_FSIZE (no privileges needed, unlike a small mount).
// The broker must answer KAFKA_STORAGE_ERROR to writes it cannot make,
// hand its partitions over and stop, and lose nothing it acknowledged.
func (n *nemesis) diskFullFor(ctx context.Context, s FaultStep) error {
	i := s.broker
	if !n.c.Running(i) {
		return nil
	}
	// The limit holds for every file, the metadata log's too, and a
	// metadata log that cannot be written halts the node. This fault is
	// about partition logs (a failed one also stops the broker, after it
	// hands over): skip a broker whose metadata log is near the limit.
	metaDir := filepath.Join(n.c.Dir(), fmt.Sprintf("broker-%d", i+1), "__cluster_metadata-0")
	if largest := largestFile(metaDir); largest > diskFullBytes/2 {
		fmt.Fprintf(n.log, "nemesis: skipping disk-full on broker %d: its metadata log holds a %d-byte file, near the %d-byte limit\n", i+1, largest, diskFullBytes)
		return nil
	}
	id := n.begin(i, FaultDiskFull, fmt.Sprintf("fill the disk of broker %d (files may not grow past %d KiB)", i+1, diskFullBytes>>10))
	if err := limitFileSize(n.c.Pid(i), diskFullBytes); err != nil {
		return fmt.Errorf("limit the file size of broker %d: %w", i+1, err)
	}
	n.limited[i] = true
	if !sleepCtx(ctx, s.hold) {
		return nil
	}
	if n.c.ReapExited(i) {
		// A write that failed took its log directory offline: the broker
		// handed its partitions over and exited. The limit died with the
		// process; a restart brings the directory back.
		n.limited[i] = false
		if err := n.c.Start(i); err != nil {
			return fmt.Errorf("start broker %d after its disk filled: %w", i+1, err)
		}
		n.end(id, fmt.Sprintf("broker %d had stopped on its full disk; restarted it with the disk freed", i+1))
		return nil
	}
	if n.c.Running(i) {
		if err := liftFileSizeLimit(n.c.Pid(i)); err != nil {
			return fmt.Errorf("lift the file size limit of broker %d: %w", i+1, err)
		}
	}
	n.limited[i] = false
	n.end(id, fmt.Sprintf("freed the disk of broker %d", i+1))
	return nil
}

// corrupt stops a follower of a partition with kill -9, damages one of its
// segments of that partition (a flipped byte in the oldest segment, or
// the newest segment's tail cut), and starts it again. The replica must
// notice, keep the damage from anyone, and copy the data back from the
// leader; the other replicas still hold everything acknowledged.
func (n *nemesis) corrupt(ctx context.Context, s FaultStep) error {
	partition := s.partition % int32(n.parts)
	leader := n.leaderOr(ctx, partition, s.broker)
	victim := s.broker
	if victim == leader {
		victim = (victim + 1) % n.c.Brokers()
	}
	if !n.c.Running(victim) {
		return nil
	}
	dir := filepath.Join(n.c.Dir(), fmt.Sprintf("broker-%d", victim+1), fmt.Sprintf("%s-%d", n.topic, partition))
	id := n.begin(victim, FaultCorrupt, fmt.Sprintf("kill -9 broker %d to damage its copy of partition %d", victim+1, partition))
	n.c.Kill(victim)
	what, err := damageSegment(dir, s.truncate)
	if err != nil {
		fmt.Fprintf(n.log, "nemesis: %v\n", err)
		what = "nothing damaged: " + err.Error()
	}
	if err := n.c.Start(victim); err != nil {
		return fmt.Errorf("start broker %d after damaging its log: %w", victim+1, err)
	}
	n.end(id, fmt.Sprintf("started broker %d again after: %s", victim+1, what))
	return nil
}

// damageSegment flips one byte in the middle of the oldest segment of the
// partition directory dir, or cuts the newest segment's last third, and
// says what it did.
func damageSegment(dir string, truncate bool) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("damage a segment: %w", err)
	}
	var segments []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") && !e.IsDir() {
			segments = append(segments, e.Name())
		}
	}
	slices.Sort(segments) // zero-padded base offsets sort as numbers
	if len(segments) == 0 {
		return "", fmt.Errorf("damage a segment: no segment in %s", dir)
	}
	name := segments[0]
	if truncate {
		name = segments[len(segments)-1]
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("damage a segment: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("damage a segment: %w", err)
	}
	// The active segment of a killed broker may end in the log's
	// zero-filled write-ahead window (storage/zerotail.go); damage
	// there would touch no batch, so the damage aims at the bytes up
	// to the last non-zero one.
	size, err := nonZeroEnd(f, info.Size())
	if err != nil {
		return "", fmt.Errorf("damage a segment: %w", err)
	}
	if size < 2 {
		return "", fmt.Errorf("damage a segment: %s holds %d bytes", path, size)
	}
	if truncate {
		keep := size - max(1, size/3)
		if err := f.Truncate(keep); err != nil {
			return "", fmt.Errorf("damage a segment: %w", err)
		}
		return fmt.Sprintf("cut %s from %d to %d bytes", path, size, keep), f.Sync()
	}
	at := size / 2
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		return "", fmt.Errorf("damage a segment: %w", err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, at); err != nil {
		return "", fmt.Errorf("damage a segment: %w", err)
	}
	return fmt.Sprintf("flipped byte %d of %s (%d bytes)", at, path, size), f.Sync()
}

// largestFile is the size of the largest file under dir (0 if none).
func largestFile(dir string) int64 {
	var largest int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			largest = max(largest, info.Size())
		}
		return nil
	})
	return largest
}

// nonZeroEnd is the position after the last non-zero byte of the first
// size bytes of f.
func nonZeroEnd(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		from := max(0, end-int64(len(buf)))
		chunk := buf[:end-from]
		if _, err := f.ReadAt(chunk, from); err != nil {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != 0 {
				return from + int64(i) + 1, nil
			}
		}
		end = from
	}
	return 0, nil
}
