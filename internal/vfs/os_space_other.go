//go:build !unix

package vfs

import (
	"errors"
	"fmt"
)

// Space implements FS; without statfs the free-space floor cannot be
// checked, and the broker says so instead of guessing.
func (OS) Space(dir string) (Space, error) {
	return Space{}, fmt.Errorf("free space of %s: %w", dir, errors.ErrUnsupported)
}
