package node

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/records"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// metadataDirName is the directory of the metadata log inside the first
// log directory, named as KRaft names its own.
const metadataDirName = "__cluster_metadata-0"

// maxMetadataBatchBytes bounds one commit of metadata records.
const maxMetadataBatchBytes = 8 << 20

// metaStore is the durable log of metadata records on a single broker: each
// commit is one fsynced batch, and replaying the log rebuilds the image.
// The replicated cluster replaces it with the Raft log; the records and the
// image they build are the same.
type metaStore struct {
	mu  sync.Mutex
	log *storage.Log
}

func openMetaStore(fs vfs.FS, dir string, logger *slog.Logger) (*metaStore, []metadata.Record, error) {
	l, err := storage.Open(fs, dir, storage.DefaultConfig(), storage.Options{Logger: logger.With("log", "metadata")})
	if err != nil {
		return nil, nil, fmt.Errorf("open metadata log: %w", err)
	}
	if _, err := l.Sync(); err != nil {
		l.Close()
		return nil, nil, fmt.Errorf("sync metadata log: %w", err)
	}
	var recs []metadata.Record
	offset := l.LogStartOffset()
	end := l.LogEndOffset()
	for offset < end {
		data, err := l.Read(offset, maxMetadataBatchBytes, end, true)
		if err != nil {
			l.Close()
			return nil, nil, fmt.Errorf("read metadata log at %d: %w", offset, err)
		}
		if len(data) == 0 {
			break
		}
		err = batch.Split(data, func(b []byte) error {
			h, rs, err := records.Decode(b, maxMetadataBatchBytes)
			if err != nil {
				return err
			}
			for _, r := range rs {
				rec, err := metadata.DecodeRecord(r.Value)
				if err != nil {
					return fmt.Errorf("metadata record at %d: %w", h.BaseOffset+int64(r.OffsetDelta), err)
				}
				recs = append(recs, rec)
			}
			offset = h.LastOffset() + 1
			return nil
		})
		if err != nil {
			l.Close()
			return nil, nil, fmt.Errorf("replay metadata log: %w", err)
		}
	}
	return &metaStore{log: l}, recs, nil
}

// append makes records durable as one batch.
func (m *metaStore) append(recs []metadata.Record) error {
	values := make([][]byte, 0, len(recs))
	size := 0
	for _, r := range recs {
		v, err := metadata.EncodeRecord(r)
		if err != nil {
			return fmt.Errorf("encode metadata record: %w", err)
		}
		size += len(v)
		values = append(values, v)
	}
	if size > maxMetadataBatchBytes {
		return fmt.Errorf("metadata commit of %d bytes exceeds the %d-byte limit", size, maxMetadataBatchBytes)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.log.Append(batch.Build(values, time.Now().UnixMilli()), 0, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("append metadata: %w", err)
	}
	if _, err := m.log.Sync(); err != nil {
		return fmt.Errorf("sync metadata: %w", err)
	}
	return nil
}

func (m *metaStore) close() error { return m.log.Close() }
