package sim

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// traceKeep bounds the trace lines kept for a failure report; the hash
// covers every line, so two runs compare exactly however long they are.
const traceKeep = 400

// trace records what happened, for a person reading a failure and for the
// determinism test (which compares hashes of complete traces).
type trace struct {
	lines   []string // ring of the last traceKeep lines
	next    int
	total   int64
	hash    uint64
	verbose bool // print every line as it happens (replaying one seed)
	out     func(string)
}

func newTrace() *trace { return &trace{hash: fnv.New64a().Sum64()} }

func (t *trace) add(now time.Duration, format string, args ...any) {
	line := fmt.Sprintf("%10.3fs %s", now.Seconds(), fmt.Sprintf(format, args...))
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(t.hash >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(line))
	t.hash = h.Sum64()
	t.total++
	if t.verbose && t.out != nil {
		t.out(line)
	}
	if len(t.lines) < traceKeep {
		t.lines = append(t.lines, line)
		return
	}
	t.lines[t.next] = line
	t.next = (t.next + 1) % traceKeep
}

// tail returns the kept lines, oldest first.
func (t *trace) tail() string {
	var sb strings.Builder
	if t.total > int64(len(t.lines)) {
		fmt.Fprintf(&sb, "... %d earlier events omitted ...\n", t.total-int64(len(t.lines)))
	}
	for i := range t.lines {
		sb.WriteString(t.lines[(t.next+i)%len(t.lines)])
		sb.WriteByte('\n')
	}
	return sb.String()
}
