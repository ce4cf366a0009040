package sim

import (
	"github.com/skein-log/skein/internal/metadata"
)

// snapshotter lets quorum.Core snapshot and restore a process's image.
type snapshotter struct{ p *process }

func (s snapshotter) Snapshot() ([]byte, error) { return metadata.EncodeSnapshot(s.p.image) }

// Restore installs a snapshot's image, as internal/node does
// (metadata.RestoreSnapshot: its version is the snapshot's index).
func (s snapshotter) Restore(index uint64, data []byte) error {
	im, err := metadata.RestoreSnapshot(s.p.empty, index, data)
	if err != nil {
		return err
	}
	s.p.setImage(im, "snapshot")
	return nil
}
