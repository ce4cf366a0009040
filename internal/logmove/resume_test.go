package logmove

import "testing"

func TestResume(t *testing.T) {
	// The current log: epoch 1 from 0, 2 from 100, 3 from 200, ending at
	// 300. A future copied up to 250: its last batch is 240..249.
	srcEpochs := []EpochStart{{1, 0}, {2, 100}, {3, 200}}
	last := Batch{Base: 240, Last: 249, Epoch: 3, CRC: 77}
	base := Kept{
		SrcStart: 0, SrcEnd: 300, SrcEpochs: srcEpochs, SrcAt: last, HasSrcAt: true,
		FutStart: 0, FutEnd: 250, FutEpochs: srcEpochs, FutLast: last, HasFutLast: true,
	}
	with := func(f func(k *Kept)) Kept {
		k := base
		f(&k)
		return k
	}
	cases := []struct {
		name string
		k    Kept
		want Step
	}{
		{"a prefix: copy on from its end", base, Step{Kind: Copy, Offset: 250}},
		{"a prefix of a current log that ends there", with(func(k *Kept) { k.SrcEnd = 250 }), Step{Kind: Copy, Offset: 250}},
		{"retention moved the start inside it: still a prefix", with(func(k *Kept) { k.SrcStart = 120; k.SrcEpochs = []EpochStart{{2, 120}, {3, 200}} }), Step{Kind: Copy, Offset: 250}},
		{"retention moved the start past its end", with(func(k *Kept) { k.SrcStart = 260; k.SrcEpochs = []EpochStart{{3, 260}} }), Step{Kind: Reset, Offset: 260}},
		{"retention moved the start to its end", with(func(k *Kept) { k.SrcStart = 250; k.SrcEpochs = []EpochStart{{3, 250}} }), Step{Kind: Reset, Offset: 250}},
		{"the current log restarted below it", with(func(k *Kept) { k.FutStart = 10 }), Step{Kind: Reset, Offset: 0}},
		{"empty", with(func(k *Kept) { k.HasFutLast = false; k.FutEnd = 0 }), Step{Kind: Reset, Offset: 0}},
		{"truncated below its end, another epoch appended", with(func(k *Kept) {
			// A follower cut its tail at 220 and took epoch 4 there.
			k.SrcEpochs = []EpochStart{{1, 0}, {2, 100}, {3, 200}, {4, 220}}
			k.SrcAt = Batch{Base: 240, Last: 249, Epoch: 4, CRC: 5}
		}), Step{Kind: Truncate, Offset: 220}},
		{"truncated below its end, not appended to since", with(func(k *Kept) { k.SrcEnd = 220; k.HasSrcAt = false }), Step{Kind: Truncate, Offset: 220}},
		{"truncated into its first epoch", with(func(k *Kept) {
			k.SrcEpochs = []EpochStart{{1, 0}, {2, 100}, {4, 150}}
			k.HasSrcAt = false
			k.SrcEnd = 230
		}), Step{Kind: Truncate, Offset: 150}},
		{"an epoch the current log never had", with(func(k *Kept) { k.FutEpochs = []EpochStart{{1, 0}, {2, 100}, {9, 200}} }), Step{Kind: Truncate, Offset: 200}},
		{"diverging from the start", with(func(k *Kept) { k.SrcEpochs = []EpochStart{{5, 0}} }), Step{Kind: Reset, Offset: 0}},
		{"same epochs, another CRC (compacted since)", with(func(k *Kept) { k.SrcAt.CRC = 78 }), Step{Kind: Reset, Offset: 0}},
		{"same epochs, the batch gone (compacted since)", with(func(k *Kept) { k.HasSrcAt = false }), Step{Kind: Reset, Offset: 0}},
		{"same epochs, another batch boundary", with(func(k *Kept) { k.SrcAt.Base = 230 }), Step{Kind: Reset, Offset: 0}},
		{"the last batch past its end", with(func(k *Kept) { k.FutLast.Last = 250 }), Step{Kind: Reset, Offset: 0}},
	}
	for _, c := range cases {
		if got := ResumeFrom(c.k); got != c.want {
			t.Errorf("%s: Resume = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestResumeTruncationsEnd: a future cut back as ResumeFrom says, and asked
// again, ends kept or reset, never cut forever.
func TestResumeTruncationsEnd(t *testing.T) {
	src := []EpochStart{{1, 0}, {4, 150}}
	fut := []EpochStart{{1, 0}, {2, 100}, {3, 200}}
	k := Kept{SrcStart: 0, SrcEnd: 400, SrcEpochs: src, FutStart: 0, FutEnd: 250, FutEpochs: fut,
		FutLast: Batch{Base: 240, Last: 249, Epoch: 3}, HasFutLast: true}
	for range 10 {
		st := ResumeFrom(k)
		if st.Kind != Truncate {
			t.Fatalf("after cutting to %d: %+v, want a truncation to 100", k.FutEnd, st)
		}
		if st.Offset >= k.FutEnd {
			t.Fatalf("truncation to %d does not cut a future ending at %d", st.Offset, k.FutEnd)
		}
		// Storage cuts it; the epoch 2 batch 90..99 is then its last,
		// which the current log holds as epoch 1: the histories part at 100.
		k.FutEnd = st.Offset
		k.FutEpochs = []EpochStart{{1, 0}, {2, 100}}
		if st.Offset == 100 {
			k.FutEpochs = []EpochStart{{1, 0}}
			k.FutLast = Batch{Base: 90, Last: 99, Epoch: 1, CRC: 3}
			k.SrcAt, k.HasSrcAt = k.FutLast, true
			if got := ResumeFrom(k); got != (Step{Kind: Copy, Offset: 100}) {
				t.Fatalf("cut to where they agree: %+v", got)
			}
			return
		}
	}
	t.Fatal("never cut to where they agree")
}
