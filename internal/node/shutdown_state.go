package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skein-log/skein/internal/vfs"
)

// shutdownStateFile says, in every log dir, up to which broker epoch this
// broker's logs still hold everything the process wrote: what registration
// sends as PreviousBrokerEpoch (KIP-966). The controller keeps a broker in
// the ELRs of write.caching topics only when it matches the broker's last
// registration, because with write.caching a record is acknowledged while
// it is only in the page cache.
//
// The process rewrites it at start, after every registration and after a
// clean shutdown (every log closed and synced). A process that crashed
// loses nothing it wrote as long as the kernel kept running: the page
// cache still reaches the disk. So the state also names the kernel boot;
// only a crash across a reboot (a power loss, a kernel crash) counts as
// unclean.
const shutdownStateFile = "broker.shutdown_state"

// shutdownState is one shutdownStateFile.
type shutdownState struct {
	// Epoch is the broker epoch the process ran with, -1 if it cannot
	// vouch for any (never registered, or started after an unclean stop).
	Epoch int64
	// BootID is the kernel boot the process ran in ("" if unknown).
	BootID string
	// Clean says the process shut down cleanly.
	Clean bool
}

func (s shutdownState) encode() []byte {
	return fmt.Appendf(nil, "broker.epoch=%d\nboot.id=%s\nclean=%t\n", s.Epoch, s.BootID, s.Clean)
}

func parseShutdownState(data []byte) (shutdownState, error) {
	props := parseSimpleProperties(string(data))
	epoch, err := strconv.ParseInt(props["broker.epoch"], 10, 64)
	if err != nil {
		return shutdownState{}, fmt.Errorf("broker.epoch: %w", err)
	}
	clean, err := strconv.ParseBool(props["clean"])
	if err != nil {
		return shutdownState{}, fmt.Errorf("clean: %w", err)
	}
	return shutdownState{Epoch: max(epoch, -1), BootID: props["boot.id"], Clean: clean}, nil
}

// previousCleanEpoch is the epoch up to which the logs hold everything,
// given the state the previous process left (ok false: none, or the log
// dirs disagree) and the current kernel boot.
func previousCleanEpoch(prev shutdownState, ok bool, bootID string) int64 {
	switch {
	case !ok:
		return -1
	case prev.Clean:
		return prev.Epoch
	case bootID != "" && prev.BootID == bootID:
		return prev.Epoch // the process crashed; the page cache did not
	default:
		return -1
	}
}

// currentBootID identifies the running kernel boot (Linux); "" elsewhere,
// which makes every crash count as unclean.
func currentBootID() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// readShutdownState reads the state every log dir holds; ok is false when
// one lacks it or they differ (a directory that was replaced or copied).
func (b *Broker) readShutdownState() (st shutdownState, ok bool, err error) {
	for i, dir := range b.cfg.LogDirs {
		data, err := vfs.ReadFile(b.fs, filepath.Join(dir, shutdownStateFile))
		if errors.Is(err, os.ErrNotExist) {
			return shutdownState{}, false, nil
		}
		if err != nil {
			return shutdownState{}, false, fmt.Errorf("read %s in %s: %w", shutdownStateFile, dir, err)
		}
		s, perr := parseShutdownState(data)
		if perr != nil {
			b.log.Warn("shutdown state unreadable; counting the last stop as unclean", "dir", dir, "err", perr)
			return shutdownState{}, false, nil
		}
		if i > 0 && s != st {
			return shutdownState{}, false, nil
		}
		st = s
	}
	return st, true, nil
}

// writeShutdownState writes st into every log dir, durably.
func (b *Broker) writeShutdownState(st shutdownState) error {
	for _, dir := range b.cfg.LogDirs {
		if err := vfs.WriteFileAtomic(b.fs, dir, filepath.Join(dir, shutdownStateFile), st.encode()); err != nil {
			return fmt.Errorf("write %s in %s: %w", shutdownStateFile, dir, err)
		}
	}
	return nil
}

// takeShutdownState sets b.previousCleanEpoch from what the previous
// process left and records this one as running (not clean), vouching for
// no more than the previous one could: a crash before this process
// registers then reads the same.
func (b *Broker) takeShutdownState() error {
	b.bootID = currentBootID()
	prev, ok, err := b.readShutdownState()
	if err != nil {
		return err
	}
	b.previousCleanEpoch = previousCleanEpoch(prev, ok, b.bootID)
	return b.writeShutdownState(shutdownState{Epoch: b.previousCleanEpoch, BootID: b.bootID})
}
