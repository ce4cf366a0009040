//go:build unix

package node

import "syscall"

// volumeBytes is the size and the space available to this process of the
// filesystem holding dir (DescribeLogDirs v4's TotalBytes, UsableBytes).
func volumeBytes(dir string) (total, usable int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1, err
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize), nil
}
