package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/reassignplan"
)

// The cluster changes shape under real clients (issue #15's end-to-end
// proof): three brokers grow to five, the replicas are rebalanced over
// them, two original brokers are emptied and stopped, one topic goes from
// replication factor 2 to 3 and another from 3 to 2, all while a franz-go
// and a sarama idempotent acks=all producer write to both topics and a
// franz-go consumer group of two members reads them.

const (
	reshapeRF2        = "reshape-rf2" // replication factor 2, raised to 3
	reshapeRF3        = "reshape-rf3" // replication factor 3, lowered to 2
	reshapePartitions = 3
	reshapeGroup      = "reshape-readers"
	offsetsTopic      = "__consumer_offsets"
	// saramaBase separates the producers' record numbers: franz-go's count
	// from 0, sarama's from here, so a partition's log splits into the two
	// producers' sequences, each checked on its own.
	saramaBase = 1 << 40
	// reshapeTick paces each stream (one record per tick at most): a
	// steady load rather than a flood that would starve the catch-up of
	// the moving replicas on a small machine.
	reshapeTick = 2 * time.Millisecond
	// reshapeProgress is how many more records each stream must have
	// acknowledged after every step: the producers keep working
	// throughout, not only before and after.
	reshapeProgress = 50
)

func TestClusterReshapeUnderLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Node 1 is the controller (a dedicated one, so emptying and stopping
	// brokers never touches the metadata quorum); nodes 2-4 are the
	// original brokers, 5 and 6 join later with ids the cluster has never
	// seen.
	c := newRolesCluster(t, []string{controllerOnly, brokerOnly, brokerOnly, brokerOnly, brokerOnly, brokerOnly},
		map[string]string{
			"offsets.topic.num.partitions":     "3",
			"group.initial.rebalance.delay.ms": "0",
		}, node.Options{})
	haltAllAtEnd(t, c)
	for i := range 4 {
		c.start(i)
	}
	c.waitRegistered()
	addrs := c.addrs() // brokers 2..6, in order
	seeds := addrs[:3] // the originals; clients learn of the others from Metadata
	adm := observerClient(t, seeds)
	lister := newSeededClient(t, seeds)
	awaitBrokerList(ctx, t, lister, []int32{2, 3, 4})
	createReplicatedTopic(ctx, t, adm, reshapeRF2, reshapePartitions, 2, nil)
	createReplicatedTopic(ctx, t, adm, reshapeRF3, reshapePartitions, 3, map[string]string{"min.insync.replicas": "2"})

	load := startReshapeLoad(ctx, t, seeds)
	load.awaitProgress(ctx, t)
	// The group has read (so __consumer_offsets exists and holds its
	// commits before its replicas move too).
	load.group.awaitRead(ctx, t, 1)

	// Grow: brokers 5 and 6 join.
	c.start(4)
	c.start(5)
	c.waitRegistered()
	awaitBrokerList(ctx, t, lister, []int32{2, 3, 4, 5, 6})
	load.awaitProgress(ctx, t)

	// Rebalance the two topics over the five brokers (what `skein
	// partitions reassign --generate` proposes).
	balanced, err := reassignplan.Generate(assignmentsOf(ctx, t, adm, reshapeRF2, reshapeRF3), []int32{2, 3, 4, 5, 6}, 0)
	if err != nil {
		t.Fatal(err)
	}
	executePlan(ctx, t, adm, "rebalance", balanced)
	for _, joined := range []int32{5, 6} {
		if n := replicasOn(balanced, joined); n == 0 {
			t.Fatalf("the balanced plan gives broker %d nothing: %v", joined, balanced)
		}
	}
	load.awaitProgress(ctx, t)

	// Decommission brokers 2 and 3, one after the other (as `skein broker
	// decommission` would): every replica off the broker, __consumer_offsets
	// included, then the broker stops.
	live := []int32{2, 3, 4, 5, 6}
	for _, gone := range []int32{2, 3} {
		live = slices.DeleteFunc(live, func(b int32) bool { return b == gone })
		plan, err := reassignplan.Decommission(assignmentsOf(ctx, t, adm, reshapeRF2, reshapeRF3, offsetsTopic), gone, live, nil)
		if err != nil {
			t.Fatal(err)
		}
		executePlan(ctx, t, adm, fmt.Sprintf("decommission of broker %d", gone), plan)
		awaitNoLogs(ctx, t, adm, gone)
		c.stop(int(gone) - 1)
		awaitBrokerList(ctx, t, lister, live)
		load.awaitProgress(ctx, t)
	}

	// Change the replication factors: reshape-rf2 to 3, reshape-rf3 to 2.
	up, err := reassignplan.Generate(assignmentsOf(ctx, t, adm, reshapeRF2), live, 3)
	if err != nil {
		t.Fatal(err)
	}
	down, err := reassignplan.Generate(assignmentsOf(ctx, t, adm, reshapeRF3), live, 2)
	if err != nil {
		t.Fatal(err)
	}
	executePlan(ctx, t, adm, "replication factor change", append(up, down...))
	load.awaitProgress(ctx, t)

	load.stopAndCheck(ctx, t, addrs[2:])
	// No broker stopped by itself (a replica deleted under an fsync once
	// took its broker down as a failed disk).
	for i, b := range c.brokers {
		if b == nil {
			continue
		}
		select {
		case err := <-b.Fatal():
			t.Errorf("node %d stopped by itself: %v", i+1, err)
		default:
		}
	}
}

// assignmentsOf is the current replica placement of every partition of
// the topics, from Metadata.
func assignmentsOf(ctx context.Context, t *testing.T, adm *kadm.Client, topics ...string) []reassignplan.Assignment {
	t.Helper()
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	var out []reassignplan.Assignment
	for _, topic := range topics {
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			t.Fatalf("topic %s in metadata: %v (present %v)", topic, td.Err, ok)
		}
		for p, pd := range td.Partitions {
			out = append(out, reassignplan.Assignment{Topic: topic, Partition: p, Replicas: slices.Clone(pd.Replicas)})
		}
	}
	reassignplan.Sort(out)
	return out
}

func replicasOn(plan []reassignplan.Assignment, broker int32) int {
	n := 0
	for _, a := range plan {
		if slices.Contains(a.Replicas, broker) {
			n++
		}
	}
	return n
}

// executePlan starts the plan's reassignments through
// AlterPartitionReassignments and waits until they completed: Metadata
// shows every target, in order, with its whole ISR, and
// ListPartitionReassignments lists none of them.
func executePlan(ctx context.Context, t *testing.T, adm *kadm.Client, what string, plan []reassignplan.Assignment) {
	t.Helper()
	if len(plan) == 0 {
		t.Fatalf("%s: an empty plan", what)
	}
	start := time.Now()
	defer func() { t.Logf("%s done in %v", what, time.Since(start).Round(time.Millisecond)) }()
	t.Logf("%s: %s", what, reassignplan.Format(plan))
	var req kadm.AlterPartitionAssignmentsReq
	moving := kadm.TopicsSet{}
	for _, a := range plan {
		req.Assign(a.Topic, a.Partition, a.Replicas)
		moving.Add(a.Topic, a.Partition)
	}
	mustReassign(ctx, t, adm, req)
	for _, a := range plan {
		awaitReplicas(ctx, t, adm, a.Topic, a.Partition, fmt.Sprint(a.Replicas), func(r []int32) bool { return slices.Equal(r, a.Replicas) })
		awaitPartition(ctx, t, adm, a.Topic, a.Partition, fmt.Sprintf("ISR %v", a.Replicas), func(v partitionView) bool {
			return v.Leader >= 0 && sameSet(v.ISR, a.Replicas)
		})
	}
	awaitAdmin(ctx, t, what+": no reassignment listed", func() (bool, any) {
		list, err := adm.ListPartitionReassignments(ctx, moving)
		return err == nil && len(list) == 0, fmt.Sprintf("%+v (err %v)", list, err)
	})
}

// awaitNoLogs waits until a broker holds no partition's log
// (DescribeLogDirs of that broker).
func awaitNoLogs(ctx context.Context, t *testing.T, adm *kadm.Client, broker int32) {
	t.Helper()
	awaitAdmin(ctx, t, fmt.Sprintf("broker %d without logs", broker), func() (bool, any) {
		// Metadata first: the client addresses a broker by id from the
		// broker list of its last Metadata answer, which a request to a
		// broker does not refresh.
		if _, err := adm.BrokerMetadata(ctx); err != nil {
			return false, err
		}
		dirs, err := adm.DescribeBrokerLogDirs(ctx, broker, nil)
		if err != nil {
			return false, err
		}
		var held []string
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			held = append(held, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
		})
		return len(held) == 0, held
	})
}

// reshapeLoad is the clients' side of the test: a franz-go and a sarama
// producer, each with one paced stream per topic, and a franz-go group.
type reshapeLoad struct {
	streams     []*pacedStream
	closeSarama func() error
	// saramaDone is closed once sarama's Successes and Errors channels
	// are drained (after the producer closed).
	saramaDone chan struct{}
	group      *groupReads
	readersWG  sync.WaitGroup
	stopRead   context.CancelFunc
}

func startReshapeLoad(ctx context.Context, t *testing.T, seeds []string) *reshapeLoad {
	t.Helper()
	l := &reshapeLoad{group: newGroupReads(), saramaDone: make(chan struct{})}

	franz := idempotentProducer(t, seeds)
	for _, topic := range []string{reshapeRF2, reshapeRF3} {
		l.streams = append(l.streams, startPaced(ctx, "franz-go", topic, 0, func(n int, done func(int32, error)) error {
			r := &kgo.Record{Topic: topic, Partition: int32(n % reshapePartitions), Value: []byte(strconv.Itoa(n))}
			franz.Produce(ctx, r, func(r *kgo.Record, err error) { done(r.Partition, err) })
			return nil
		}))
	}

	producer, err := sarama.NewAsyncProducer(seeds, saramaIdempotentConfig("skein-e2e-reshape-sarama"))
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	// sarama's Close must run once: a second one panics.
	l.closeSarama = sync.OnceValue(producer.Close)
	t.Cleanup(func() { l.closeSarama() })
	type outcome = func(int32, error)
	var outcomes sync.WaitGroup
	outcomes.Add(2)
	go func() {
		defer outcomes.Done()
		for m := range producer.Successes() {
			m.Metadata.(outcome)(m.Partition, nil)
		}
	}()
	go func() {
		defer outcomes.Done()
		for e := range producer.Errors() {
			e.Msg.Metadata.(outcome)(e.Msg.Partition, e.Err)
		}
	}()
	go func() { outcomes.Wait(); close(l.saramaDone) }()
	for _, topic := range []string{reshapeRF2, reshapeRF3} {
		l.streams = append(l.streams, startPaced(ctx, "sarama", topic, saramaBase, func(n int, done func(int32, error)) error {
			m := &sarama.ProducerMessage{Topic: topic, Partition: int32(n % reshapePartitions), Value: sarama.StringEncoder(strconv.Itoa(n)), Metadata: outcome(done)}
			select {
			case producer.Input() <- m:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}))
	}

	readCtx, stopRead := context.WithCancel(ctx)
	l.stopRead = stopRead
	t.Cleanup(func() { stopRead(); l.readersWG.Wait() }) // a failed test's members leave too
	for i := range 2 {
		l.group.join(readCtx, t, seeds, fmt.Sprintf("reader-%d", i), &l.readersWG)
	}
	return l
}

// awaitProgress waits until every stream has reshapeProgress more records
// acknowledged than now.
func (l *reshapeLoad) awaitProgress(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, s := range l.streams {
		awaitProgress(ctx, t, s.acks, reshapeProgress)
	}
}

// stopAndCheck stops the producers, lets the group read everything, and
// checks the outcome: no record failed, every acknowledged record is in
// the log exactly once and in order per producer, the log's offsets are
// contiguous, and the group read every offset of every partition, each
// member without a gap, the values the log holds there.
func (l *reshapeLoad) stopAndCheck(ctx context.Context, t *testing.T, seeds []string) {
	t.Helper()
	for _, s := range l.streams {
		s.stopAndWait(ctx, t)
	}
	if err := l.closeSarama(); err != nil {
		t.Errorf("sarama producer close: %v", err)
	}
	select {
	case <-l.saramaDone:
	case <-ctx.Done():
		t.Fatalf("sarama's outcome channels never closed: %v", ctx.Err())
	}
	for _, s := range l.streams {
		_, n, errs := s.acks.snapshot()
		if f := s.acks.failures(); f > 0 {
			t.Errorf("%s: %d of %d records failed: %v", s, f, s.sent, errs)
		}
		t.Logf("%s: %d records acknowledged", s, n)
	}

	adm := observerClient(t, seeds)
	for _, topic := range []string{reshapeRF2, reshapeRF3} {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil || ends.Error() != nil {
			t.Fatalf("end offsets of %s: %v %v", topic, err, ends.Error())
		}
		end := map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
		l.group.awaitReadAll(ctx, t, topic, end)

		logged := readNumbered(ctx, t, seeds, topic)
		for p := range int32(reshapePartitions) {
			values := logged[p]
			if int64(len(values)) != end[p] {
				t.Fatalf("%s/%d: %d records below end offset %d: the offsets have a hole", topic, p, len(values), end[p])
			}
			var fromFranz, fromSarama []int
			for _, n := range values {
				if n >= saramaBase {
					fromSarama = append(fromSarama, n)
				} else {
					fromFranz = append(fromFranz, n)
				}
			}
			for _, s := range l.streams {
				if s.topic != topic {
					continue
				}
				acked, _, _ := s.acks.snapshot()
				read := fromFranz
				if s.base == saramaBase {
					read = fromSarama
				}
				checkExactlyOnceInOrder(t, p, acked[p], read)
			}
			l.group.checkCovered(t, topic, p, values)
		}
	}
	l.stopRead()
	l.readersWG.Wait()
	l.group.checkNoErrors(t)
}

// pacedStream produces numbered records from base up, one per reshapeTick
// at most and at most streamWindow unanswered, until stopped.
type pacedStream struct {
	client string
	topic  string
	base   int
	acks   *ackedRecords
	stop   chan struct{}
	done   chan error
	sent   int // read after done
}

func (s *pacedStream) String() string { return s.client + " to " + s.topic }

// startPaced runs send for record numbers base, base+1, ... on its own
// goroutine; send must call done exactly once with the record's outcome.
func startPaced(ctx context.Context, client, topic string, base int, send func(n int, done func(int32, error)) error) *pacedStream {
	s := &pacedStream{client: client, topic: topic, base: base, acks: newAckedRecords(), stop: make(chan struct{}), done: make(chan error, 1)}
	go func() { s.done <- s.run(ctx, send) }()
	return s
}

func (s *pacedStream) run(ctx context.Context, send func(int, func(int32, error)) error) error {
	slots := make(chan struct{}, streamWindow)
	tick := time.NewTicker(reshapeTick)
	defer tick.Stop()
	for n := s.base; ; n++ {
		select {
		case <-tick.C:
		case <-s.stop:
			// Every slot back: every record sent has its outcome.
			for range streamWindow {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return fmt.Errorf("%d records without an outcome: %w", len(slots), ctx.Err())
				}
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("record %d not sent: %w", n, ctx.Err())
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("record %d not sent: %w", n, ctx.Err())
		}
		if err := send(n, func(p int32, err error) {
			s.acks.add(n, p, err)
			<-slots
		}); err != nil {
			return fmt.Errorf("record %d: %w", n, err)
		}
		s.sent++
	}
}

func (s *pacedStream) stopAndWait(ctx context.Context, t *testing.T) {
	t.Helper()
	close(s.stop)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	case <-ctx.Done():
		t.Fatalf("%s never stopped: %v", s, ctx.Err())
	}
}

type topicPartition struct {
	topic     string
	partition int32
}

// groupReads is what the members of one consumer group read, and the gaps
// and errors they met. A member reads a partition it owns from one offset
// on without a gap (each record at the offset after the previous one); a
// partition newly assigned to it starts at an offset the group has
// already reached (the committed one, at or before), never beyond.
type groupReads struct {
	mu        sync.Mutex
	next      map[topicPartition]int64            // one past the highest offset any member read
	read      map[topicPartition]map[int64]int    // offset -> record number, as read
	last      map[string]map[topicPartition]int64 // member -> the last offset it read of an owned partition
	problems  []string                            // the first maxProblems
	nProblems int
	changed   chan struct{} // closed (and replaced) whenever next moves
}

// maxProblems bounds what groupReads keeps for the report.
const maxProblems = 20

func newGroupReads() *groupReads {
	return &groupReads{
		next:    map[topicPartition]int64{},
		read:    map[topicPartition]map[int64]int{},
		last:    map[string]map[topicPartition]int64{},
		changed: make(chan struct{}),
	}
}

func (g *groupReads) problem(format string, args ...any) {
	g.nProblems++
	if len(g.problems) < maxProblems {
		g.problems = append(g.problems, fmt.Sprintf(format, args...))
	}
}

// join starts a member of the group polling on its own goroutine until
// ctx ends. Rebalances wait while a poll's records are being recorded
// (BlockRebalanceOnPoll), so a partition changes hands only between polls,
// and the next owner's first offset is compared with all the previous
// owner read.
func (g *groupReads) join(ctx context.Context, t *testing.T, seeds []string, member string, wg *sync.WaitGroup) {
	t.Helper()
	forget := func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
		g.mu.Lock()
		defer g.mu.Unlock()
		for topic, ps := range parts {
			for _, p := range ps {
				delete(g.last[member], topicPartition{topic, p})
			}
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(reshapeGroup),
		kgo.ConsumeTopics(reshapeRF2, reshapeRF3),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(forget),
		kgo.OnPartitionsLost(forget),
		kgo.MetadataMinAge(250*time.Millisecond),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("%s: %v", member, err)
	}
	g.mu.Lock()
	g.last[member] = map[topicPartition]int64{}
	g.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		// A plain Close would wait for a rebalance this member blocks.
		defer cl.CloseAllowingRebalance()
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			g.record(member, fs)
			cl.AllowRebalance()
		}
	}()
}

func (g *groupReads) record(member string, fs kgo.Fetches) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fs.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
			g.problem("%s: fetch %s/%d: %v", member, topic, p, err)
		}
	})
	moved := false
	fs.EachRecord(func(r *kgo.Record) {
		tp := topicPartition{r.Topic, r.Partition}
		n, err := strconv.Atoi(string(r.Value))
		if err != nil {
			g.problem("%s: %s/%d@%d: value %q is not a record number", member, r.Topic, r.Partition, r.Offset, r.Value)
			return
		}
		if last, owned := g.last[member][tp]; owned && r.Offset != last+1 {
			g.problem("%s: %s/%d: offset %d after %d", member, r.Topic, r.Partition, r.Offset, last)
		} else if !owned && r.Offset > g.next[tp] {
			g.problem("%s: %s/%d: took over at offset %d, the group had read only up to %d", member, r.Topic, r.Partition, r.Offset, g.next[tp])
		}
		g.last[member][tp] = r.Offset
		if g.read[tp] == nil {
			g.read[tp] = map[int64]int{}
		}
		if prev, dup := g.read[tp][r.Offset]; dup && prev != n {
			g.problem("%s: %s/%d@%d: record %d, read before as %d", member, r.Topic, r.Partition, r.Offset, n, prev)
		}
		g.read[tp][r.Offset] = n
		if r.Offset >= g.next[tp] {
			g.next[tp] = r.Offset + 1
			moved = true
		}
	})
	if moved {
		close(g.changed)
		g.changed = make(chan struct{})
	}
}

// awaitUntil waits until done holds for what the group read.
func (g *groupReads) awaitUntil(ctx context.Context, t *testing.T, what string, done func() bool) {
	t.Helper()
	for {
		g.mu.Lock()
		ok, changed, next := done(), g.changed, fmt.Sprint(g.next)
		g.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the group never %s: read up to %s", what, next)
		}
	}
}

// awaitRead waits until the group has read n records of any partition.
func (g *groupReads) awaitRead(ctx context.Context, t *testing.T, n int64) {
	t.Helper()
	g.awaitUntil(ctx, t, fmt.Sprintf("read %d records", n), func() bool {
		var total int64
		for _, next := range g.next {
			total += next
		}
		return total >= n
	})
}

// awaitReadAll waits until the group has read every partition of topic up
// to its end offset.
func (g *groupReads) awaitReadAll(ctx context.Context, t *testing.T, topic string, end map[int32]int64) {
	t.Helper()
	g.awaitUntil(ctx, t, fmt.Sprintf("read %s up to %v", topic, end), func() bool {
		for p, e := range end {
			if g.next[topicPartition{topic, p}] < e {
				return false
			}
		}
		return true
	})
}

// checkCovered checks that the group read every offset of a partition,
// and there the record the log holds (logged is the log in offset order,
// from offset 0 and without holes).
func (g *groupReads) checkCovered(t *testing.T, topic string, p int32, logged []int) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	read := g.read[topicPartition{topic, p}]
	for off, n := range logged {
		got, ok := read[int64(off)]
		if !ok {
			t.Fatalf("%s/%d: the group never read offset %d", topic, p, off)
		}
		if got != n {
			t.Fatalf("%s/%d@%d: the group read record %d, the log holds %d", topic, p, off, got, n)
		}
	}
	if len(read) != len(logged) {
		t.Fatalf("%s/%d: the group read %d offsets, the log holds %d", topic, p, len(read), len(logged))
	}
}

func (g *groupReads) checkNoErrors(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.nProblems > 0 {
		t.Fatalf("the group's members met %d problems (first %d): %v", g.nProblems, len(g.problems), g.problems)
	}
}
