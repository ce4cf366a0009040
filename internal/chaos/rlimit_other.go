//go:build !linux

package chaos

import "errors"

var errNoPrlimit = errors.New("the disk-full fault needs Linux (prlimit)")

func limitFileSize(int, uint64) error { return errNoPrlimit }
func liftFileSizeLimit(int) error     { return errNoPrlimit }
