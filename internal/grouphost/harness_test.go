package grouphost

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"log/slog"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// testHandle is the smallest runtime around a Host: one goroutine, the
// time set by the test, writes held until the test reports their outcome.
type testHandle struct {
	t        *testing.T
	host     *Host
	now      int64
	writable error
	pending  []Write          // started, outcome not reported yet
	appended [][]group.Record // every records write, in start order
	reloads  []error
	problems []string
}

func (h *testHandle) Do(op func(h *Host, now int64) (Ready, error)) error {
	rd, err := op(h.host, h.now)
	if err != nil {
		return err
	}
	h.carry(rd)
	return nil
}

func (h *testHandle) Writable() error { return h.writable }

func (h *testHandle) carry(rd Ready) {
	for _, w := range rd.Writes {
		h.pending = append(h.pending, w)
		if w.Records != nil {
			h.appended = append(h.appended, w.Records)
		}
	}
	h.problems = append(h.problems, rd.Problems...)
	if rd.Reload != nil {
		h.reloads = append(h.reloads, rd.Reload)
	}
	for _, send := range rd.Send {
		send()
	}
}

// complete reports the outcome of the i-th pending write.
func (h *testHandle) complete(i int, err error) {
	h.t.Helper()
	if i >= len(h.pending) {
		h.t.Fatalf("write %d of %d pending", i, len(h.pending))
	}
	w := h.pending[i]
	h.pending = append(h.pending[:i:i], h.pending[i+1:]...)
	h.carry(h.host.Written(h.now, w.ID, err))
}

func (h *testHandle) completeAll(err error) {
	for len(h.pending) > 0 {
		h.complete(0, err)
	}
}

// testHosts are the Handles of one broker leading every partition.
type testHosts struct{ parts []*testHandle }

func (x testHosts) For(groupID string) (Handle, error) {
	return x.parts[group.PartitionFor(groupID, int32(len(x.parts)))], nil
}

func (x testHosts) All() ([]Handle, error) {
	out := make([]Handle, len(x.parts))
	for i, p := range x.parts {
		out[i] = p
	}
	return out, nil
}

func (x testHosts) ForPartition(p int32) (Handle, bool) {
	if p < 0 || int(p) >= len(x.parts) {
		return nil, false
	}
	return x.parts[p], true
}

func (testHosts) EnsureOffsetsTopic(done func(error)) { done(nil) }

func openLog(t *testing.T, cfg storage.Config) *storage.Log {
	t.Helper()
	l, err := storage.Open(vfs.NewMem(), "/p", cfg, storage.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func appendBatch(t *testing.T, l *storage.Log, b []byte, now int64) {
	t.Helper()
	if _, err := l.Append(b, 0, now); err != nil {
		t.Fatal(err)
	}
}

func recordsBatch(recs []group.Record, now int64) []byte {
	kvs := make([]batch.KeyValue, len(recs))
	for i, r := range recs {
		kvs[i] = batch.KeyValue{Key: r.Key, Value: r.Value}
	}
	return batch.BuildKeyed(kvs, now)
}

// controlBatch is a transaction marker (an abort): its record's key is a
// control key, which is no group record.
func controlBatch() []byte {
	b := batch.BuildKeyed([]batch.KeyValue{{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}}}, 0)
	attrs := binary.BigEndian.Uint16(b[21:])
	binary.BigEndian.PutUint16(b[21:], attrs|uint16(batch.ControlBit|batch.TransactionalBit))
	binary.BigEndian.PutUint64(b[43:], 7) // producer id
	binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
	return b
}

// gzipped recompresses an uncompressed batch's records with gzip.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	if _, err := w.Write(b[batch.HeaderSize:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := append(append([]byte(nil), b[:batch.HeaderSize]...), z.Bytes()...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	attrs := binary.BigEndian.Uint16(out[21:])
	binary.BigEndian.PutUint16(out[21:], attrs|1) // gzip
	binary.BigEndian.PutUint32(out[17:], batch.CRC(out))
	return out
}

// commitRecords are the records of a simple consumer's commit.
func commitRecords(t *testing.T, groupID string, offsets ...group.CommitOffset) []group.Record {
	t.Helper()
	c, err := group.New(group.DefaultConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	_, out := c.CommitOffsets(0, group.CommitRequest{GroupID: groupID, Generation: -1, Offsets: offsets})
	if len(out.Records) == 0 {
		t.Fatal("the commit made no records")
	}
	return out.Records
}

// newActive is a Host of an empty partition, loaded and serving.
func newActive(t *testing.T) *testHandle {
	t.Helper()
	l, err := Replay(group.DefaultConfig(), 1, openLog(t, storage.DefaultConfig()), "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	h := &testHandle{t: t, host: New("p")}
	if err := h.Do(func(host *Host, now int64) (Ready, error) { return host.Activate(now, l), nil }); err != nil {
		t.Fatal(err)
	}
	h.completeAll(nil) // the empty log is committed
	return h
}
