package verify

import (
	"strings"
	"testing"
)

// chainHistory builds txn workload histories with a chain: the input
// transactions of txnHistory, read whole by both consumers when
// committed; transformers whose transactions read such an input
// transaction's records and write one output each, in output partition
// = input partition.
type chainHistory struct {
	*txnHistory
	outNext map[int32]int64
	outputs map[string][]string // chain transaction -> output values
	outOffs map[string][]int64
	outPart map[string][]int32
}

func newChainHistory() *chainHistory {
	b := &chainHistory{txnHistory: newTxnHistory(), outNext: map[int32]int64{}, outputs: map[string][]string{},
		outOffs: map[string][]int64{}, outPart: map[string][]int32{}}
	b.h.Meta.Transformers, b.h.Meta.ChainGroup, b.h.Meta.OutputTopic = 2, "g", "t-out"
	b.h.Meta.ChainCaughtUp, b.h.Meta.ChainDrainComplete = true, true
	return b
}

// input writes input transaction name; a committed one both consumers
// read.
func (b *chainHistory) input(name, note string) *chainHistory {
	b.txn(name, note, "")
	if note == "commit" {
		b.readTxn(1, name).readTxn(2, name)
	}
	return b
}

func (b *chainHistory) init(x int, pid int64, epoch int16) *chainHistory {
	b.add(Event{Type: EventChainInit, Consumer: x, Group: "g", ProducerID: pid, Epoch: epoch})
	return b
}

// chain has transformer x transform input transaction in as chain
// transaction name, carrying offset+1 of each input (or carried, when
// given), and end it with outcome, sent by producer pid/epoch.
func (b *chainHistory) chain(x int, name, in, outcome string, pid int64, epoch int16, carried map[int32]int64) *chainHistory {
	offs := map[int32]int64{}
	for i, v := range b.values[in] {
		p, o := int32(i), b.offsets[in][i]
		b.add(Event{Type: EventChainRead, Consumer: x, Group: "g", Txn: name, Partition: p, Offset: o, Value: v})
		offs[p] = o + 1
	}
	for i, v := range b.values[in] {
		p, o := int32(i), b.offsets[in][i]
		out := ChainValue(name, p, o, v)
		b.add(Event{Type: EventChainWrite, Consumer: x, Group: "g", Txn: name, Partition: p, Value: out})
		b.add(Event{Type: EventChainWritten, Consumer: x, Group: "g", Txn: name, Partition: p, Offset: b.outNext[p], Value: out})
		b.outputs[name] = append(b.outputs[name], out)
		b.outOffs[name] = append(b.outOffs[name], b.outNext[p])
		b.outPart[name] = append(b.outPart[name], p)
		b.outNext[p] += 2
	}
	if carried != nil {
		offs = carried
	}
	for p, o := range offs {
		b.add(Event{Type: EventChainOffset, Consumer: x, Group: "g", Txn: name, Partition: p, Offset: o})
	}
	b.add(Event{Type: EventChainEnd, Consumer: x, Group: "g", Txn: name, Note: outcome, ProducerID: pid, Epoch: epoch, Latency: 500_000})
	return b
}

// out has consumer c read chain transaction name's outputs (all, or the
// first n).
func (b *chainHistory) out(c int, name string, n ...int) *chainHistory {
	for i, v := range b.outputs[name] {
		if len(n) > 0 && i >= n[0] {
			break
		}
		b.add(Event{Type: EventChainOutput, Consumer: c, Partition: b.outPart[name][i], Offset: b.outOffs[name][i], Value: v})
	}
	return b
}

func (b *chainHistory) both(name string) *chainHistory { return b.out(1, name).out(2, name) }

func (b *chainHistory) final(offsets map[int32]int64) *chainHistory {
	for p := range int32(2) {
		o, ok := offsets[p]
		if !ok {
			o = -1
		}
		b.add(Event{Type: EventChainCommitted, Group: "g", Partition: p, Offset: o})
	}
	return b
}

func TestCheckChain(t *testing.T) {
	// Input: t1 committed (offsets 0, marker 1), t2 aborted (2, 3), t3
	// committed (4, 5) in each partition. Transformer 1 commits x1.t1
	// (t1's inputs), aborts x1.t2 (t3's), commits x1.t3 (t3's again).
	base := func() *chainHistory {
		return newChainHistory().input("p1.t1", "commit").input("p1.t2", "abort").input("p1.t3", "commit").
			init(1, 7, 0).init(2, 8, 0).
			chain(1, "x1.t1", "p1.t1", "commit", 7, 0, nil).both("x1.t1").
			chain(1, "x1.t2", "p1.t3", "abort", 7, 0, nil).
			chain(1, "x1.t3", "p1.t3", "commit", 7, 0, nil).both("x1.t3")
	}
	done := map[int32]int64{0: 5, 1: 5}
	tests := []struct {
		name  string
		build func() *chainHistory
		want  map[Kind]int
		check func(t *testing.T, r *Result)
	}{
		{"valid", func() *chainHistory { return base().final(done) }, nil, func(t *testing.T, r *Result) {
			if st := r.Chain; st.Committed != 2 || st.Aborted != 1 || st.Inputs != 4 || st.Transformed != 4 || st.Inits != 2 || st.FencedEnds != 0 {
				t.Fatalf("stats %+v", st)
			}
		}},
		{"valid, the chain stopped midway", func() *chainHistory {
			return newChainHistory().input("p1.t1", "commit").input("p1.t2", "abort").input("p1.t3", "commit").init(1, 7, 0).
				chain(1, "x1.t1", "p1.t1", "commit", 7, 0, nil).both("x1.t1").final(map[int32]int64{0: 1, 1: 1})
		}, nil, func(t *testing.T, r *Result) {
			if st := r.Chain; st.Inputs != 2 || st.Transformed != 2 {
				t.Fatalf("stats %+v", st)
			}
		}},
		{"valid, an unknown outcome read whole", func() *chainHistory {
			return base().chain(2, "x2.t1", "p1.t1", "unknown", 8, 0, map[int32]int64{0: 5, 1: 5}).final(done)
		}, nil, func(t *testing.T, r *Result) {
			if st := r.Chain; st.Unknown != 1 || st.UnknownCommitted != 0 {
				t.Fatalf("stats %+v", st)
			}
		}},
		{"a committed output missing for one consumer", func() *chainHistory {
			b := newChainHistory().input("p1.t1", "commit").init(1, 7, 0).chain(1, "x1.t1", "p1.t1", "commit", 7, 0, nil)
			return b.out(1, "x1.t1").out(2, "x1.t1", 1).final(map[int32]int64{0: 1, 1: 1})
		}, map[Kind]int{ChainLost: 1}, nil},
		{"an aborted output delivered", func() *chainHistory {
			return base().out(2, "x1.t2", 1).final(done)
		}, map[Kind]int{ChainAbortedRead: 1}, nil},
		{"an unknown outcome read in part", func() *chainHistory {
			return base().chain(2, "x2.t1", "p1.t1", "unknown", 8, 0, map[int32]int64{0: 5, 1: 5}).out(1, "x2.t1").final(done)
		}, map[Kind]int{ChainPartial: 1}, nil},
		{"an input transformed by two committed transactions", func() *chainHistory {
			return base().chain(2, "x2.t1", "p1.t1", "commit", 8, 0, map[int32]int64{0: 5, 1: 5}).both("x2.t1").final(done)
		}, map[Kind]int{ChainDuplicate: 2}, nil},
		{"an output read twice", func() *chainHistory {
			return base().out(1, "x1.t1", 1).final(done)
		}, map[Kind]int{ChainDuplicate: 1}, nil},
		{"the committed offset moved with an aborted transaction", func() *chainHistory {
			return newChainHistory().input("p1.t1", "commit").input("p1.t2", "abort").input("p1.t3", "commit").init(1, 7, 0).
				chain(1, "x1.t1", "p1.t1", "commit", 7, 0, nil).both("x1.t1").
				chain(1, "x1.t2", "p1.t3", "abort", 7, 0, nil).final(done)
		}, map[Kind]int{ChainOffset: 2, ChainLost: 2}, nil},
		{"a committed offset lost", func() *chainHistory {
			return base().final(map[int32]int64{0: 5})
		}, map[Kind]int{ChainOffset: 3}, nil},
		{"a committed transaction carried an offset below its input", func() *chainHistory {
			return newChainHistory().input("p1.t1", "commit").init(1, 7, 0).
				chain(1, "x1.t1", "p1.t1", "commit", 7, 0, map[int32]int64{0: 0, 1: 1}).both("x1.t1").final(map[int32]int64{0: 0, 1: 1})
		}, map[Kind]int{ChainOffset: 2}, nil},
		{"a fenced producer committed", func() *chainHistory {
			b := newChainHistory().input("p1.t1", "commit").init(1, 7, 0)
			b.add(Event{Type: EventChainRead, Consumer: 1, Group: "g", Txn: "x1.t1", Partition: 0, Offset: 0, Value: b.values["p1.t1"][0]})
			b.init(1, 7, 1) // a successor fences epoch 0 before x1.t1 ends
			b.now += 10_000_000
			return b.chain(1, "x1.t1", "p1.t1", "commit", 7, 0, nil).both("x1.t1").final(map[int32]int64{0: 1, 1: 1})
		}, map[Kind]int{FencedCommit: 1}, nil},
		{"valid, a fenced producer's end refused", func() *chainHistory {
			b := newChainHistory().input("p1.t1", "commit").init(1, 7, 0).init(1, 7, 1)
			b.now += 10_000_000
			return b.chain(1, "x1.t1", "p1.t1", "unknown", 7, 0, nil).
				chain(1, "x1.t2", "p1.t1", "commit", 7, 1, nil).both("x1.t2").final(map[int32]int64{0: 1, 1: 1})
		}, nil, func(t *testing.T, r *Result) {
			if r.Chain.FencedEnds != 1 {
				t.Fatalf("stats %+v", r.Chain)
			}
		}},
		{"an output nobody wrote", func() *chainHistory {
			b := base()
			b.add(Event{Type: EventChainOutput, Consumer: 1, Partition: 0, Offset: 99, Value: ChainValue("x9.t1", 0, 0, "p1-1")})
			return b.final(done)
		}, map[Kind]int{ChainPhantom: 1}, nil},
		{"a transformer read an aborted input", func() *chainHistory {
			return newChainHistory().input("p1.t1", "commit").input("p1.t2", "abort").init(1, 7, 0).
				chain(1, "x1.t1", "p1.t1", "commit", 7, 0, nil).both("x1.t1").
				chain(1, "x1.t2", "p1.t2", "commit", 7, 0, nil).both("x1.t2").final(map[int32]int64{0: 3, 1: 3})
		}, map[Kind]int{ChainPhantom: 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.build().h
			r := CheckTxn(&h)
			expectKinds(t, r, h.Meta, tt.want)
			if tt.check != nil {
				tt.check(t, r)
			}
			v := r.Verdict(h.Meta)
			if !strings.Contains(v, "chain (group g, 2 transformers") || !strings.Contains(v, string(FencedCommit)) {
				t.Fatalf("verdict lacks the chain lines:\n%s", v)
			}
		})
	}
}

// Without the final committed offsets the chain's outcomes are still
// judged, and the verdict says what could not be.
func TestCheckChainWithoutFinalOffsets(t *testing.T) {
	b := newChainHistory().input("p1.t1", "commit").init(1, 7, 0).chain(1, "x1.t1", "p1.t1", "commit", 7, 0, nil).out(1, "x1.t1")
	h := b.h
	r := CheckTxn(&h)
	if r.Valid || r.Counts[ChainLost] != 2 {
		t.Fatalf("want the unread outputs lost, got %v", r.Counts)
	}
	if v := r.Verdict(h.Meta); !strings.Contains(v, "could not be read") {
		t.Fatalf("verdict:\n%s", v)
	}
}

func TestChainValueRoundTrip(t *testing.T) {
	o, ok := parseChainValue(ChainValue("x1.t2", 3, 44, "p1-9|odd"))
	if !ok || o.txn != "x1.t2" || o.input != (position{3, 44}) || o.value != "p1-9|odd" {
		t.Fatalf("parsed %+v %t", o, ok)
	}
	if _, ok := parseChainValue("p1-9"); ok {
		t.Fatal("a plain value parsed as an output")
	}
}
