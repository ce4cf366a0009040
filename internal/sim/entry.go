package sim

import (
	"fmt"

	"github.com/skein-log/skein/internal/metadata"
)

// snapshotter lets quorum.Core snapshot and restore a process's image.
type snapshotter struct{ p *process }

func (s snapshotter) Snapshot() ([]byte, error) {
	return metadata.EncodeEntry(metadata.ImageRecords(s.p.image))
}

// Restore sets the image's version to the snapshot's index, as
// imageSnapshotter.Restore does in internal/node.
func (s snapshotter) Restore(index uint64, data []byte) error {
	recs, err := metadata.DecodeEntry(data)
	if err != nil {
		return fmt.Errorf("decode metadata snapshot: %w", err)
	}
	im, err := s.p.empty.Apply(recs...)
	if err != nil {
		return fmt.Errorf("apply metadata snapshot: %w", err)
	}
	s.p.setImage(im.WithVersion(int64(index)), "snapshot")
	return nil
}
