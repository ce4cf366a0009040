package verify

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
)

// historyBuilder writes hand-made histories: each call appends one event
// one millisecond after the previous.
type historyBuilder struct {
	h   History
	now time.Duration
}

func newHistory(acks Acks, idempotent bool) *historyBuilder {
	return &historyBuilder{h: History{Meta: Meta{Topic: "t", Partitions: 2, Producers: 2, Consumers: 2, Acks: acks, Idempotent: idempotent, DrainComplete: true}}}
}

func (b *historyBuilder) add(e Event) *historyBuilder {
	b.now += time.Millisecond
	e.At = b.now
	b.h.Events = append(b.h.Events, e)
	return b
}

func value(producer int, seq int64) string { return fmt.Sprintf("p%d-%d", producer, seq) }

func (b *historyBuilder) send(producer int, seq int64, partition int32) *historyBuilder {
	return b.add(Event{Type: EventSend, Producer: producer, Seq: seq, Partition: partition, Value: value(producer, seq)})
}

func (b *historyBuilder) ack(producer int, seq int64, partition int32, offset int64) *historyBuilder {
	return b.add(Event{Type: EventAck, Producer: producer, Seq: seq, Partition: partition, Offset: offset, Value: value(producer, seq), Latency: 5 * time.Millisecond})
}

// sendAck sends a value and acknowledges it at once.
func (b *historyBuilder) sendAck(producer int, seq int64, partition int32, offset int64) *historyBuilder {
	return b.send(producer, seq, partition).ack(producer, seq, partition, offset)
}

func (b *historyBuilder) fail(producer int, seq int64, partition int32, definite bool) *historyBuilder {
	return b.add(Event{Type: EventFail, Producer: producer, Seq: seq, Partition: partition, Value: value(producer, seq), Err: "boom", Definite: definite})
}

func (b *historyBuilder) read(consumer int, partition int32, offset int64, v string) *historyBuilder {
	return b.add(Event{Type: EventRead, Consumer: consumer, Poll: 1, Partition: partition, Offset: offset, Value: v})
}

// readAll has consumer c read the given values of a partition from offset 0 on.
func (b *historyBuilder) readAll(consumer int, partition int32, values ...string) *historyBuilder {
	for i, v := range values {
		b.read(consumer, partition, int64(i), v)
	}
	return b
}

// clean is a history with nothing wrong: two producers on two partitions,
// everything acknowledged and read by both consumers.
func clean() *historyBuilder {
	b := newHistory(AcksAll, true)
	b.sendAck(1, 1, 0, 0).sendAck(2, 1, 1, 0).sendAck(1, 2, 1, 1).sendAck(2, 2, 0, 1).sendAck(1, 3, 0, 2)
	for c := 1; c <= 2; c++ {
		b.readAll(c, 0, "p1-1", "p2-2", "p1-3").readAll(c, 1, "p2-1", "p1-2")
	}
	return b
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name       string
		history    *historyBuilder
		valid      bool
		counts     map[Kind]int
		indefinite int // IndefiniteButPresent
		detail     string
	}{
		{name: "clean", history: clean(), valid: true, counts: map[Kind]int{}},
		{
			name: "lost: acknowledged, a later offset read, never itself",
			history: newHistory(AcksAll, true).sendAck(1, 1, 0, 0).sendAck(1, 2, 0, 1).sendAck(1, 3, 0, 2).
				read(1, 0, 0, "p1-1").read(1, 0, 2, "p1-3"),
			counts: map[Kind]int{Lost: 1, PollSkip: 1},
			detail: "p1-2: acknowledged at 0@1, never read, though offset 2 was",
		},
		{
			name:    "unseen: acknowledged, nothing after it read",
			history: newHistory(AcksAll, true).sendAck(1, 1, 0, 0).sendAck(1, 2, 0, 1).readAll(1, 0, "p1-1"),
			counts:  map[Kind]int{Unseen: 1},
			detail:  "acknowledged at 0@1, never read by the end",
		},
		{
			name: "duplicated: one value at two offsets",
			history: newHistory(AcksAll, true).sendAck(1, 1, 0, 0).sendAck(1, 2, 0, 1).
				readAll(1, 0, "p1-1", "p1-2", "p1-2"),
			counts: map[Kind]int{Duplicated: 1},
			detail: "p1-2 at 0@1 and 0@2",
		},
		{
			name: "inconsistent offset: two consumers read different values at one offset",
			history: newHistory(AcksAll, true).sendAck(1, 1, 0, 0).sendAck(1, 2, 0, 1).send(1, 3, 0).
				readAll(1, 0, "p1-1", "p1-2").read(2, 0, 0, "p1-3"),
			counts: map[Kind]int{InconsistentOffset: 1},
			detail: "offset 0@0 holds p1-1 (consumer 1) and p1-3 (consumer 2)",
		},
		{
			name: "inconsistent offset: a read disagrees with the acks=all acknowledgement",
			history: newHistory(AcksAll, true).sendAck(1, 1, 0, 0).send(1, 2, 0).
				readAll(1, 0, "p1-2"),
			counts: map[Kind]int{InconsistentOffset: 1, Unseen: 1},
			detail: "offset 0@0 holds p1-2 (consumer 1) and p1-1 (ack)",
		},
		{
			name: "reordered: a producer's values out of order in a partition",
			history: newHistory(AcksAll, true).send(1, 1, 0).send(1, 2, 0).ack(1, 2, 0, 0).ack(1, 1, 0, 1).
				readAll(1, 0, "p1-2", "p1-1"),
			counts: map[Kind]int{Reordered: 1},
			detail: "p1-1 at offset 1 of partition 0 comes after p1-2 at offset 0, sent later",
		},
		{
			name:    "failed but present: a definite failure was read",
			history: newHistory(AcksAll, true).send(1, 1, 0).fail(1, 1, 0, true).readAll(1, 0, "p1-1"),
			counts:  map[Kind]int{FailedButPresent: 1},
			detail:  "p1-1 was reported failed, yet read at 0@0",
		},
		{
			name:       "indefinite failure read after all is allowed",
			history:    newHistory(AcksAll, true).send(1, 1, 0).fail(1, 1, 0, false).readAll(1, 0, "p1-1"),
			valid:      true,
			counts:     map[Kind]int{},
			indefinite: 1,
		},
		{
			name: "poll skip: a consumer jumps over offsets another consumer read",
			history: newHistory(AcksAll, true).sendAck(1, 1, 0, 0).sendAck(1, 2, 0, 1).sendAck(1, 3, 0, 2).
				readAll(2, 0, "p1-1", "p1-2", "p1-3").read(1, 0, 0, "p1-1").read(1, 0, 2, "p1-3"),
			counts: map[Kind]int{PollSkip: 1},
			detail: "consumer 1 jumped in partition 0 from offset 0 to 2 (poll 1), skipping 1",
		},
		{
			name: "non-monotonic poll: a consumer goes back",
			history: newHistory(AcksAll, true).sendAck(1, 1, 0, 0).sendAck(1, 2, 0, 1).
				readAll(1, 0, "p1-1", "p1-2").read(1, 0, 0, "p1-1"),
			counts: map[Kind]int{NonMonotonicPoll: 1},
			detail: "consumer 1 read partition 0 offset 0 (poll 1) after offset 1",
		},
		{
			name:    "phantom: a value nobody sent",
			history: newHistory(AcksAll, true).sendAck(1, 1, 0, 0).readAll(1, 0, "p1-1", "p9-9"),
			counts:  map[Kind]int{Phantom: 1},
			detail:  "p9-9 read at 0@1 was never sent",
		},
		{
			name: "acks=0: lost without an offset, judged by the producer's later values",
			history: newHistory(AcksNone, false).sendAck(1, 1, 0, -1).sendAck(1, 2, 0, -1).sendAck(1, 3, 0, -1).
				readAll(1, 0, "p1-1", "p1-3"),
			valid:  true, // acks=0 may lose records
			counts: map[Kind]int{Lost: 1},
			detail: "acknowledged without an offset, never read",
		},
		{
			name: "acks=1: a lost record is allowed",
			// p1-2 was acknowledged by a leader that died before copying it;
			// the next leader gave its offset to p1-3.
			history: newHistory(AcksLeader, false).sendAck(1, 1, 0, 0).sendAck(1, 2, 0, 1).sendAck(1, 3, 0, 1).sendAck(1, 4, 0, 2).
				readAll(1, 0, "p1-1", "p1-3", "p1-4"),
			valid:  true,
			counts: map[Kind]int{Lost: 1},
		},
		{
			name: "non-idempotent: a duplicate from a retry is allowed",
			history: newHistory(AcksAll, false).sendAck(1, 1, 0, 1).
				readAll(1, 0, "p1-1", "p1-1"),
			valid:  true,
			counts: map[Kind]int{Duplicated: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(&tt.history.h)
			if r.Valid != tt.valid {
				t.Errorf("Valid = %v, want %v\n%s", r.Valid, tt.valid, r.Verdict(tt.history.h.Meta))
			}
			got := map[Kind]int{}
			for k, n := range r.Counts {
				if n != 0 {
					got[k] = n
				}
			}
			if !maps.Equal(got, tt.counts) {
				t.Errorf("counts = %v, want %v\n%s", got, tt.counts, r.Verdict(tt.history.h.Meta))
			}
			if r.IndefiniteButPresent != tt.indefinite {
				t.Errorf("IndefiniteButPresent = %d, want %d", r.IndefiniteButPresent, tt.indefinite)
			}
			if tt.detail != "" && !strings.Contains(r.Verdict(tt.history.h.Meta), tt.detail) {
				t.Errorf("verdict does not mention %q:\n%s", tt.detail, r.Verdict(tt.history.h.Meta))
			}
		})
	}
}

func TestCheckCountsAllButKeepsFewExamples(t *testing.T) {
	b := newHistory(AcksAll, true)
	const n = 3 * MaxExamples
	for i := range int64(n) {
		b.sendAck(1, i+1, 0, i)
	}
	// Only the last value is read: every earlier one is lost.
	b.read(1, 0, n-1, value(1, n))
	r := Check(&b.h)
	if r.Counts[Lost] != n-1 || len(r.Examples[Lost]) != MaxExamples {
		t.Fatalf("lost count %d with %d examples, want %d with %d", r.Counts[Lost], len(r.Examples[Lost]), n-1, MaxExamples)
	}
	if r.Examples[Lost][0].Value != "p1-1" {
		t.Errorf("first example %q, want the earliest acknowledgement p1-1", r.Examples[Lost][0].Value)
	}
	if v := r.Verdict(b.h.Meta); !strings.HasPrefix(v, "INVALID: 14 anomalies") || !strings.Contains(v, "and 9 more") {
		t.Errorf("verdict:\n%s", v)
	}
}

func TestCheckTotals(t *testing.T) {
	b := clean().send(1, 4, 0).fail(1, 4, 0, false).send(2, 3, 1).fail(2, 3, 1, true)
	r := Check(&b.h)
	if r.Sent != 7 || r.Acked != 5 || r.Failed != 1 || r.Indefinite != 1 || r.Reads != 10 || r.ReadValues != 5 {
		t.Errorf("totals: %+v", r)
	}
	if v := r.Verdict(b.h.Meta); !strings.HasPrefix(v, "VALID: 0 anomalies; 7 sent, 5 acknowledged, 1 failed, 1 with unknown outcome, 10 reads of 5 values by 2 consumers") {
		t.Errorf("verdict:\n%s", v)
	}
	if r.FailureReasons["boom"] != 2 || !strings.Contains(r.Verdict(b.h.Meta), "2 sends failed with: boom") {
		t.Errorf("failure reasons %v", r.FailureReasons)
	}
}

func TestVerdictNotesIncompleteDrain(t *testing.T) {
	b := clean()
	b.h.Meta.DrainComplete = false
	b.h.Meta.DrainNote = "consumer 2 at offset 1 of 3 in partition 0"
	if v := Check(&b.h).Verdict(b.h.Meta); !strings.Contains(v, "drain incomplete: consumer 2 at offset 1 of 3") {
		t.Errorf("verdict:\n%s", v)
	}
}
