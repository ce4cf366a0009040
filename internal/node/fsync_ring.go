package node

import "github.com/skein-log/skein/internal/vfs"

// openFsyncRing decides, once per start, how the broker's logs wait for
// fdatasync: through an io_uring (vfs.FsyncRing), where the waiting
// goroutine parks and its thread and P go on running what the append
// readied, or by the system call in place. Only the broker's own OS
// filesystem gets the ring; a filesystem handed in (tests, the
// simulator's) is used as given.
func (b *Broker) openFsyncRing() {
	if !b.ownFS || b.fsyncRing != nil {
		return
	}
	if !b.cfg.LogFsyncIoUring {
		b.log.Info("fdatasync called in place", "log.fsync.io.uring.enable", false)
		return
	}
	r, err := vfs.OpenFsyncRing()
	if err != nil {
		b.log.Warn("io_uring unavailable, fdatasync called in place", "err", err)
		return
	}
	b.fsyncRing = r
	b.fs = vfs.OS{Ring: r}
	b.log.Info("fdatasync through io_uring")
}

// closeFsyncRing releases the ring once its fsyncs in flight are
// answered; later syncs call fdatasync in place. Safe to call again.
func (b *Broker) closeFsyncRing() {
	if b.fsyncRing == nil {
		return
	}
	if err := b.fsyncRing.Close(); err != nil {
		b.log.Warn("closing the io_uring", "err", err)
	}
	if n := b.fsyncRing.Fallbacks(); n > 0 {
		b.log.Info("fsyncs the io_uring refused, called in place", "count", n)
	}
}
