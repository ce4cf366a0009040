package producer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/skein-log/skein/internal/batch"
)

// simProducer is a client's view of its own sequence state.
type simProducer struct {
	id      int64
	epoch   int16
	nextSeq int32
	sent    []batch.Header // previously sent batches of the current epoch
}

// randomBatch picks what a (possibly misbehaving) producer sends next.
func (p *simProducer) randomBatch(r *rand.Rand, ts int64) batch.Header {
	n := int32(1 + r.IntN(4))
	switch k := r.IntN(20); {
	case k < 10: // next in order
	case k < 14 && len(p.sent) > 0: // retry of a recent (or too old) batch
		return p.sent[len(p.sent)-1-r.IntN(min(len(p.sent), 8))]
	case k < 15: // gap
		return hdr(p.id, p.epoch, addSeq(p.nextSeq, 1+r.Int32N(3)), n, -1, ts)
	case k < 16: // epoch bump, sometimes wrongly not at 0
		p.epoch++
		p.sent = nil
		if r.IntN(4) == 0 {
			return hdr(p.id, p.epoch, 1+r.Int32N(5), n, -1, ts)
		}
		p.nextSeq = 0
	case k < 17: // zombie with an older epoch
		return hdr(p.id, p.epoch-1-int16(r.IntN(2)), p.nextSeq, n, -1, ts)
	case k < 18:
		return marker(p.id, p.epoch, -1, ts)
	case k < 19:
		return hdr(batch.NoProducerID, -1, batch.NoSequence, n, -1, ts)
	default: // jump close to the wrap so it is exercised
		p.nextSeq = math.MaxInt32 - r.Int32N(3)
	}
	h := hdr(p.id, p.epoch, p.nextSeq, n, -1, ts)
	p.nextSeq = addSeq(p.nextSeq, n)
	p.sent = append(p.sent, h)
	return h
}

func addSeq(s, n int32) int32 {
	v := int64(s) + int64(n)
	if v > math.MaxInt32 {
		v -= math.MaxInt32 + 1
	}
	return int32(v)
}

// TestRebuildEquivalence drives a leader table with random traffic, then
// replays the resulting log through Apply and expects the same table.
func TestRebuildEquivalence(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			producers := make([]*simProducer, 1+r.IntN(4))
			for i := range producers {
				producers[i] = &simProducer{id: int64(i + 1), epoch: int16(r.IntN(3))}
			}
			leader := NewTable(100)
			var log []batch.Header
			var logEnd int64
			type key struct {
				pid      int64
				epoch    int16
				firstSeq int32
			}
			written := map[key]bool{}
			for step := range 300 {
				p := producers[r.IntN(len(producers))]
				h := p.randomBatch(r, int64(step))
				d, err := leader.Check(h)
				if err != nil || d.Action != Append {
					continue
				}
				h.BaseOffset = logEnd
				logEnd = h.LastOffset() + 1
				leader.Update(h)
				log = append(log, h)
				if h.HasProducerID() && !h.IsControl() {
					k := key{h.ProducerID, h.ProducerEpoch, h.BaseSequence}
					if written[k] {
						t.Fatalf("step %d: batch %+v written twice", step, k)
					}
					written[k] = true
				}
			}
			rebuilt := NewTable(100)
			for _, h := range log {
				rebuilt.Apply(h)
			}
			if got, want := rebuilt.Entries(), leader.Entries(); !equalEntries(got, want) {
				t.Fatalf("rebuilt table differs\n got %+v\nwant %+v", got, want)
			}
		})
	}
}
