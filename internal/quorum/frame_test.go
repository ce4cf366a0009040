package quorum

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/wire"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func sampleMessage() *raftpb.Message {
	return &raftpb.Message{
		Type: raftpb.MsgApp.Enum(), From: new(uint64(1)), To: new(uint64(2)), Term: new(uint64(7)),
		LogTerm: new(uint64(6)), Index: new(uint64(41)), Commit: new(uint64(40)),
		Entries: []*raftpb.Entry{{Term: new(uint64(7)), Index: new(uint64(42)), Data: []byte("record")}},
	}
}

func TestRaftFrameRoundTrip(t *testing.T) {
	m := sampleMessage()
	frame, err := AppendRaftFrame([]byte("prefix"), "cluster-a", m)
	if err != nil {
		t.Fatal(err)
	}
	body := frame[len("prefix"):]
	if size := binary.BigEndian.Uint32(body); int(size) != len(body)-4 {
		t.Fatalf("size prefix %d, body %d", size, len(body)-4)
	}
	h, _, err := wire.ParseHeader(body[4:])
	if err != nil || h.Key != RaftMessageKey {
		t.Fatalf("header %+v, %v", h, err)
	}
	cid, got, err := DecodeRaftFrame(body[4:])
	if err != nil || cid != "cluster-a" || !proto.Equal(got, m) {
		t.Fatalf("decoded %q %v %v", cid, got, err)
	}
}

func TestHandleRaftFrame(t *testing.T) {
	good, err := AppendRaftFrame(nil, "cluster-a", sampleMessage())
	if err != nil {
		t.Fatal(err)
	}
	other, err := AppendRaftFrame(nil, "cluster-b", sampleMessage())
	if err != nil {
		t.Fatal(err)
	}
	wrongKey := append([]byte(nil), good[4:]...)
	binary.BigEndian.PutUint16(wrongKey, 0) // Produce
	hugeClusterID := append([]byte(nil), good[4:14]...)
	hugeClusterID = binary.BigEndian.AppendUint16(hugeClusterID, 0xFFFF)
	tests := []struct {
		name    string
		body    []byte
		wantErr error
		stepped bool
	}{
		{"same cluster", good[4:], nil, true},
		{"other cluster", other[4:], ErrClusterIDMismatch, false},
		{"not a raft key", wrongKey, ErrBadFrame, false},
		{"truncated header", good[4:8], ErrBadFrame, false},
		{"cluster id longer than the frame", hugeClusterID, ErrBadFrame, false},
		{"garbage message", append(append([]byte(nil), good[4:4+10+2+len("cluster-a")]...), 0xFF, 0xFF, 0xFF), ErrBadFrame, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stepped := false
			err := HandleRaftFrame(tt.body, "cluster-a", func(*raftpb.Message) error { stepped = true; return nil })
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if stepped != tt.stepped {
				t.Fatalf("stepped = %v, want %v", stepped, tt.stepped)
			}
		})
	}
}

func TestProposalEnvelope(t *testing.T) {
	tag := proposalTag{incarnation: 0xDEADBEEF, seq: 42}
	gotTag, data, ok := decodeProposal(encodeProposal(tag, []byte("payload")))
	if !ok || gotTag != tag || string(data) != "payload" {
		t.Fatalf("got %v %q %v", gotTag, data, ok)
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, append([]byte{9}, make([]byte, 16)...)} {
		if _, _, ok := decodeProposal(bad); ok {
			t.Fatalf("decoded %v", bad)
		}
	}
}

func FuzzDecodeRaftFrame(f *testing.F) {
	good, err := AppendRaftFrame(nil, "c", sampleMessage())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good[4:])
	f.Add([]byte{0x03, 0xE8, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 1, 'c'})
	f.Fuzz(func(t *testing.T, body []byte) {
		cid, m, err := DecodeRaftFrame(body)
		if err != nil {
			return
		}
		again, err := AppendRaftFrame(nil, cid, m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, m2, err := DecodeRaftFrame(again[4:]); err != nil || !proto.Equal(m, m2) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// A dynamic quorum's frames (version 1) name the sender's endpoint; a
// static quorum's stay version 0, as before.
func TestRaftFrameSender(t *testing.T) {
	m := sampleMessage()
	v1, err := AppendRaftFrameFrom(nil, "cluster-a", "c1:9093", m)
	if err != nil {
		t.Fatal(err)
	}
	if h, _, err := wire.ParseHeader(v1[4:]); err != nil || h.Version != raftMessageVersionSender {
		t.Fatalf("header %+v, %v", h, err)
	}
	var gotSender string
	err = HandleRaftFrameFrom(v1[4:], "cluster-a", func(got *raftpb.Message, sender string) error {
		if !proto.Equal(got, m) {
			t.Errorf("message %v", got)
		}
		gotSender = sender
		return nil
	})
	if err != nil || gotSender != "c1:9093" {
		t.Fatalf("sender %q, %v", gotSender, err)
	}
	v0, _ := AppendRaftFrame(nil, "cluster-a", m)
	if _, sender, _, err := DecodeRaftFrameFrom(v0[4:]); err != nil || sender != "" {
		t.Fatalf("a version-0 frame has sender %q, %v", sender, err)
	}
	if _, err := AppendRaftFrameFrom(nil, "cluster-a", string(make([]byte, maxSenderAddrBytes+1)), m); !errors.Is(err, ErrBadFrame) {
		t.Fatalf("oversized sender: %v", err)
	}
	// A sender length past the frame's end is refused, not read.
	bad := slices.Clone(v1[4:])
	at := len(bad) - proto.Size(m) - len("c1:9093") - 2
	binary.BigEndian.PutUint16(bad[at:], 0xffff)
	if _, _, _, err := DecodeRaftFrameFrom(bad); !errors.Is(err, ErrBadFrame) {
		t.Fatalf("sender length past the end: %v", err)
	}
}
