//go:build !linux

package vfs

import (
	"errors"
	"fmt"
)

// FsyncRing is io_uring's fsync on Linux; elsewhere there is none and
// files sync with Sync.
type FsyncRing struct{}

// OpenFsyncRing fails: io_uring is Linux's.
func OpenFsyncRing() (*FsyncRing, error) {
	return nil, fmt.Errorf("io_uring: %w", errors.ErrUnsupported)
}

// Fallbacks is zero: there is no ring.
func (r *FsyncRing) Fallbacks() uint64 { return 0 }

// Close does nothing.
func (r *FsyncRing) Close() error { return nil }
