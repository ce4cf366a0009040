//go:build !unix

package node

import "errors"

// volumeBytes is unknown off Unix: DescribeLogDirs then answers -1.
func volumeBytes(string) (total, usable int64, err error) {
	return -1, -1, errors.New("volume size unknown on this platform")
}
