package main

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The decisions of skein group reset-offsets that need no cluster: which
// partitions a --topic names, what --to-datetime means, and where each
// partition's offset goes given its log bounds.

// resetKind is which --to-* flag chose the new offsets.
type resetKind int

const (
	resetToEarliest resetKind = iota
	resetToLatest
	resetToOffset
	resetToDatetime
)

// resetTarget is where reset-offsets moves a group's offsets.
type resetTarget struct {
	kind   resetKind
	offset int64 // for resetToOffset
	millis int64 // for resetToDatetime: Unix milliseconds
}

// resetTargetFlags are the raw --to-* flag values; set tells which were
// given on the command line (--to-offset 0 is a real choice).
type resetTargetFlags struct {
	earliest, latest bool
	offset           int64
	datetime         string
	set              map[string]bool
}

// target checks that exactly one --to-* flag was given and returns it.
func (f resetTargetFlags) target() (resetTarget, error) {
	var given []string
	for _, name := range []string{"to-earliest", "to-latest", "to-offset", "to-datetime"} {
		if f.set[name] {
			given = append(given, "--"+name)
		}
	}
	if len(given) != 1 {
		what := "none"
		if len(given) > 1 {
			what = strings.Join(given, ", ")
		}
		return resetTarget{}, fmt.Errorf("give exactly one of --to-earliest, --to-latest, --to-offset N, --to-datetime T (got %s)", what)
	}
	switch {
	case f.set["to-earliest"]:
		if !f.earliest {
			return resetTarget{}, errors.New("--to-earliest=false chooses nothing; give --to-earliest")
		}
		return resetTarget{kind: resetToEarliest}, nil
	case f.set["to-latest"]:
		if !f.latest {
			return resetTarget{}, errors.New("--to-latest=false chooses nothing; give --to-latest")
		}
		return resetTarget{kind: resetToLatest}, nil
	case f.set["to-offset"]:
		if f.offset < 0 {
			return resetTarget{}, fmt.Errorf("--to-offset %d: want an offset of 0 or more", f.offset)
		}
		return resetTarget{kind: resetToOffset, offset: f.offset}, nil
	default:
		ms, err := parseDatetime(f.datetime)
		if err != nil {
			return resetTarget{}, err
		}
		return resetTarget{kind: resetToDatetime, millis: ms}, nil
	}
}

// parseDatetime reads --to-datetime: an RFC 3339 time with its zone
// (2026-11-30T14:00:00Z, 2026-11-30T15:00:00.250+01:00) or Unix
// milliseconds. A time without a zone is refused rather than guessed.
func parseDatetime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("--to-datetime %s: want a time of 0 ms or later", s)
		}
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("--to-datetime %q: want an RFC 3339 time with a zone, e.g. 2026-11-30T14:00:00Z, or Unix milliseconds", s)
	}
	if t.UnixMilli() < 0 {
		return 0, fmt.Errorf("--to-datetime %s: want a time after 1970", s)
	}
	return t.UnixMilli(), nil
}

// topicSelection is one --topic value: a topic and some of its
// partitions, or all of them when partitions is nil.
type topicSelection struct {
	topic      string
	partitions []int32 // sorted; nil means every partition
}

// parseTopicSelection reads "orders" or "orders:0,2,5" (the form Kafka's
// tool takes). Topic names cannot contain ':'.
func parseTopicSelection(s string) (topicSelection, error) {
	topic, list, hasList := strings.Cut(strings.TrimSpace(s), ":")
	topic = strings.TrimSpace(topic)
	if topic == "" {
		return topicSelection{}, fmt.Errorf("--topic %q: want topic or topic:partition,partition", s)
	}
	sel := topicSelection{topic: topic}
	if !hasList {
		return sel, nil
	}
	seen := map[int32]bool{}
	for _, p := range strings.Split(list, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return topicSelection{}, fmt.Errorf("--topic %q: %q is not a partition number", s, strings.TrimSpace(p))
		}
		if !seen[int32(n)] {
			seen[int32(n)] = true
			sel.partitions = append(sel.partitions, int32(n))
		}
	}
	sort.Slice(sel.partitions, func(i, j int) bool { return sel.partitions[i] < sel.partitions[j] })
	return sel, nil
}

// topicSelectionsFlag collects repeatable --topic values, refusing a topic
// named twice (which partitions were meant would be unclear).
type topicSelectionsFlag []topicSelection

func (f *topicSelectionsFlag) String() string {
	parts := make([]string, 0, len(*f))
	for _, s := range *f {
		parts = append(parts, s.topic)
	}
	return strings.Join(parts, ",")
}

func (f *topicSelectionsFlag) Set(v string) error {
	sel, err := parseTopicSelection(v)
	if err != nil {
		return err
	}
	for _, prev := range *f {
		if prev.topic == sel.topic {
			return fmt.Errorf("topic %s is given more than once", sel.topic)
		}
	}
	*f = append(*f, sel)
	return nil
}

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

// logBounds are a partition's log start and end offsets.
type logBounds struct{ start, end int64 }

// plannedReset is one partition's new offset, with a note when the
// requested offset had to be moved into the log.
type plannedReset struct {
	topicPartition
	offset int64
	note   string
}

// planResets computes the new offset of every partition, sorted by topic
// and partition. atTime holds, for --to-datetime, the first offset at or
// after the time as the cluster answered it (the log end when no record
// is that late). Offsets outside the log are moved to its nearer end, as
// Kafka's tool does, because a consumer could not start there.
func planResets(target resetTarget, bounds map[topicPartition]logBounds, atTime map[topicPartition]int64) ([]plannedReset, error) {
	plan := make([]plannedReset, 0, len(bounds))
	for tp, b := range bounds {
		want := int64(math.MinInt64)
		switch target.kind {
		case resetToEarliest:
			want = b.start
		case resetToLatest:
			want = b.end
		case resetToOffset:
			want = target.offset
		case resetToDatetime:
			at, ok := atTime[tp]
			if !ok {
				return nil, fmt.Errorf("%s-%d: the cluster gave no offset for the time", tp.topic, tp.partition)
			}
			want = at
		}
		r := plannedReset{topicPartition: tp, offset: want}
		switch {
		case want < b.start:
			r.offset = b.start
			r.note = fmt.Sprintf("offset %d is before the log start of %s-%d; using %d", want, tp.topic, tp.partition, b.start)
		case want > b.end:
			r.offset = b.end
			r.note = fmt.Sprintf("offset %d is past the log end of %s-%d; using %d", want, tp.topic, tp.partition, b.end)
		}
		plan = append(plan, r)
	}
	sort.Slice(plan, func(i, j int) bool {
		if plan[i].topic != plan[j].topic {
			return plan[i].topic < plan[j].topic
		}
		return plan[i].partition < plan[j].partition
	})
	return plan, nil
}
