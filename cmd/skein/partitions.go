package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/reassignplan"
)

func init() {
	commands["partitions"] = command{summary: "move partition replicas between brokers (reassign: generate, execute, verify, cancel)", run: clientCommand(runPartitions)}
}

func runPartitions(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, "usage: skein partitions reassign [flags]", map[string]clientRun{
		"reassign": runReassign,
	})
}

// runReassign is kafka-reassign-partitions: --generate a balanced plan,
// --execute it (AlterPartitionReassignments), --verify its progress
// (ListPartitionReassignments, DescribeLogDirs), --cancel it. A changed
// replication factor in a plan is a reassignment like any other.
func runReassign(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein partitions reassign", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	generate := fs.Bool("generate", false, "print the current assignment of --topics and a balanced plan for --brokers")
	execute := fs.Bool("execute", false, "start the reassignments of --plan")
	verify := fs.Bool("verify", false, "show whether the reassignments of --plan completed, and how far behind each added replica is")
	cancelFlag := fs.Bool("cancel", false, "cancel the reassignments of --plan still in progress (their partitions return to their original replicas)")
	brokers := fs.String("brokers", "", "--generate: comma-separated broker ids to place the replicas on")
	topics := fs.String("topics", "", "--generate: comma-separated topics to move")
	rf := fs.Int("replication-factor", 0, "--generate: the new replication factor (default: each partition keeps its own)")
	plan := fs.String("plan", "", "--execute, --verify, --cancel: the reassignment JSON file (kafka-reassign-partitions' format)")
	fs.StringVar(plan, "reassignment-json-file", "", "the same as --plan (kafka-reassign-partitions' name)")
	throttle := fs.Int64("throttle", -1, "--execute: throttle the copying to this many bytes/s: sets the moving partitions' leader/follower.replication.throttled.replicas and the leader/follower.replication.throttled.rate of the brokers involved (dynamic broker configs); --verify removes them once the moves complete")
	sample := fs.Duration("sample", time.Second, "--verify: look at the moving replicas' logs twice this far apart to show how fast each copies and about how long it has left (0: look once)")
	preserve := fs.Bool("preserve-throttles", false, "--verify: keep the throttle (rates and throttled-replicas lists) when every reassignment of the plan completed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	actions := 0
	for _, on := range []bool{*generate, *execute, *verify, *cancelFlag} {
		if on {
			actions++
		}
	}
	if actions != 1 {
		return errors.New("give exactly one of --generate, --execute, --verify, --cancel")
	}
	if *throttle != -1 && (!*execute || *throttle <= 0) {
		return errors.New("--throttle takes a positive number of bytes/s, with --execute")
	}
	var p reassignplan.Plan
	if !*generate {
		if *plan == "" {
			return errors.New("--plan FILE is required")
		}
		data, err := readLimited(*plan, 64<<20)
		if err != nil {
			return err
		}
		if p, err = reassignplan.Parse(data); err != nil {
			return fmt.Errorf("%s: %w", *plan, err)
		}
	}
	adm, err := newAdmin(bootstrap)
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	switch {
	case *generate:
		ids, err := parseBrokerIDs(*brokers)
		if err != nil {
			return err
		}
		if *topics == "" {
			return errors.New("--generate needs --topics")
		}
		return reassignGenerate(ctx, adm, s.out, strings.Split(*topics, ","), ids, *rf)
	case *execute:
		return reassignExecute(ctx, adm, s.out, p, *throttle)
	case *verify:
		return reassignVerify(ctx, adm, s.out, p, !*preserve, *sample)
	default:
		return reassignCancel(ctx, adm, s.out, p)
	}
}

// readLimited reads a file of at most limit bytes.
func readLimited(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return data, nil
}

func parseBrokerIDs(list string) ([]int32, error) {
	if list == "" {
		return nil, errors.New("--generate needs --brokers")
	}
	var ids []int32
	for _, f := range strings.Split(list, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("--brokers: %q is not a broker id", f)
		}
		ids = append(ids, int32(id))
	}
	return ids, nil
}

// currentAssignment reads the replicas of every partition of topics (all
// of them when a plan names partitions, only those).
func currentAssignment(ctx context.Context, adm *kadm.Client, topics []string) ([]reassignplan.Assignment, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", explainError(err))
	}
	var out []reassignplan.Assignment
	for _, name := range topics {
		t, ok := md.Topics[name]
		if !ok || t.Err != nil {
			return nil, fmt.Errorf("topic %s: %w", name, explainError(t.Err))
		}
		for _, p := range t.Partitions {
			out = append(out, reassignplan.Assignment{Topic: name, Partition: p.Partition, Replicas: slices.Clone(p.Replicas)})
		}
	}
	reassignplan.Sort(out)
	return out, nil
}

func reassignGenerate(ctx context.Context, adm *kadm.Client, out io.Writer, topics []string, brokers []int32, rf int) error {
	current, err := currentAssignment(ctx, adm, topics)
	if err != nil {
		return err
	}
	plan, err := reassignplan.Generate(current, brokers, rf)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n",
		reassignplan.Format(current), reassignplan.Format(plan))
	return nil
}

func planTopics(p reassignplan.Plan) []string {
	var names []string
	for _, a := range p.Partitions {
		if !slices.Contains(names, a.Topic) {
			names = append(names, a.Topic)
		}
	}
	return names
}

func reassignExecute(ctx context.Context, adm *kadm.Client, out io.Writer, p reassignplan.Plan, throttle int64) error {
	current, err := currentAssignment(ctx, adm, planTopics(p))
	if err != nil {
		return err
	}
	if throttle > 0 {
		// Before the moves start, as Kafka's tool does: no byte is
		// copied unthrottled.
		if err := setThrottles(ctx, adm, out, current, p.Partitions, throttle); err != nil {
			return err
		}
	}
	// Directories first, as Kafka's tool does: a replica the broker does
	// not host yet is then created in the one asked for.
	if err := alterLogDirs(ctx, adm, out, p); err != nil {
		return err
	}
	var rollback []reassignplan.Assignment
	var req kadm.AlterPartitionAssignmentsReq
	for _, a := range p.Partitions {
		i := slices.IndexFunc(current, func(c reassignplan.Assignment) bool { return c.Topic == a.Topic && c.Partition == a.Partition })
		if i < 0 {
			return fmt.Errorf("%s-%d: no such partition", a.Topic, a.Partition)
		}
		rollback = append(rollback, current[i])
		req.Assign(a.Topic, a.Partition, a.Replicas)
	}
	fmt.Fprintf(out, "Current partition replica assignment\n\n%s\n\nSave this to use as the --plan during rollback\n", reassignplan.Format(rollback))
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("alter partition reassignments: %w", explainError(err))
	}
	started, _, failed := sortResults(res, nil)
	if len(started) > 0 {
		fmt.Fprintf(out, "Successfully started partition reassignments for %s\n", strings.Join(started, ","))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d reassignments refused:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

func reassignCancel(ctx context.Context, adm *kadm.Client, out io.Writer, p reassignplan.Plan) error {
	var req kadm.AlterPartitionAssignmentsReq
	for _, a := range p.Partitions {
		req.CancelAssign(a.Topic, a.Partition)
	}
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("cancel partition reassignments: %w", explainError(err))
	}
	cancelled, idle, failed := sortResults(res, kerr.NoReassignmentInProgress)
	if len(cancelled) > 0 {
		fmt.Fprintf(out, "Successfully cancelled partition reassignments for: %s\n", strings.Join(cancelled, ","))
	}
	if len(idle) > 0 {
		fmt.Fprintf(out, "None in progress for: %s\n", strings.Join(idle, ","))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d cancellations refused:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

// sortResults splits an AlterPartitionReassignments answer into the
// partitions accepted, those refused with the error to tell apart (nil:
// none), and the other refusals with their reasons.
func sortResults(res kadm.AlterPartitionAssignmentsResponses, apart error) (ok, other, failed []string) {
	for _, r := range res.Sorted() {
		name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		switch {
		case r.Err == nil:
			ok = append(ok, name)
		case apart != nil && errors.Is(r.Err, apart):
			other = append(other, name)
		default:
			failed = append(failed, fmt.Sprintf("%s: %v", name, withBrokerMessage(r.Err, r.ErrMessage)))
		}
	}
	return ok, other, failed
}

// reassignVerify reports each partition of the plan: completed, still in
// progress (with how much each added replica's log holds, how far it is
// behind the leader's and, from a second look sample later, how fast it
// copies and about how long it has left), or idle with other replicas than
// the plan's.
func reassignVerify(ctx context.Context, adm *kadm.Client, out io.Writer, p reassignplan.Plan, clearThrottles bool, sample time.Duration) error {
	set := kadm.TopicsSet{}
	for _, a := range p.Partitions {
		set.Add(a.Topic, a.Partition)
	}
	moving, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return fmt.Errorf("list partition reassignments: %w", explainError(err))
	}
	md, err := adm.Metadata(ctx, planTopics(p)...)
	if err != nil {
		return fmt.Errorf("metadata: %w", explainError(err))
	}
	var first, second logSizes
	if len(moving) > 0 {
		if first, err = readLogSizes(ctx, adm, set); err != nil {
			return err
		}
		if sample > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(sample):
			}
			if second, err = readLogSizes(ctx, adm, set); err != nil {
				return err
			}
		}
	}
	done := true
	for _, a := range p.Partitions {
		name := fmt.Sprintf("%s-%d", a.Topic, a.Partition)
		if m, ok := moving[a.Topic][a.Partition]; ok {
			done = false
			leader := md.Topics[a.Topic].Partitions[a.Partition].Leader
			var parts []string
			for _, r := range m.AddingReplicas {
				parts = append(parts, addedReplicaProgress(first, second, a.Topic, a.Partition, leader, r))
			}
			fmt.Fprintf(out, "Reassignment of partition %s is still in progress: replicas %s, adding %s, removing %s; %s.\n",
				name, int32List(m.Replicas), int32List(m.AddingReplicas), int32List(m.RemovingReplicas), strings.Join(parts, ", "))
			continue
		}
		pd, ok := md.Topics[a.Topic].Partitions[a.Partition]
		switch {
		case !ok:
			done = false
			fmt.Fprintf(out, "Partition %s does not exist.\n", name)
		case slices.Equal(pd.Replicas, a.Replicas):
			fmt.Fprintf(out, "Reassignment of partition %s is completed.\n", name)
		default:
			done = false
			fmt.Fprintf(out, "There is no active reassignment of partition %s, but replica set is %s rather than %s.\n",
				name, int32List(pd.Replicas), int32List(a.Replicas))
		}
	}
	if done && clearThrottles {
		return removeThrottles(ctx, adm, out, planTopics(p))
	}
	return nil
}

// logSizes is one DescribeLogDirs look at every broker, and when it was
// taken; the zero value (no look) knows no size.
type logSizes struct {
	at   time.Time
	dirs kadm.DescribedAllLogDirs
}

func readLogSizes(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet) (logSizes, error) {
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return logSizes{}, fmt.Errorf("log dirs: %w", explainError(err))
	}
	return logSizes{at: time.Now(), dirs: dirs}, nil
}

func (l logSizes) size(broker int32, topic string, part int32) (int64, bool) {
	if l.dirs == nil {
		return 0, false
	}
	d, ok := l.dirs[broker].LookupPartition(topic, part)
	return d.Size, ok
}

// addedReplicaProgress describes how far added replica r of a partition
// has come: what it holds, how far behind leader it is and, when second
// is a later look, how fast it copied between the two and about how long
// the rest takes at the rate it closed on the leader.
func addedReplicaProgress(first, second logSizes, topic string, part, leader, r int32) string {
	lsz, lok := first.size(leader, topic, part)
	rsz, rok := first.size(r, topic, part)
	switch {
	case !rok:
		return fmt.Sprintf("broker %d has no log yet", r)
	case !lok:
		return fmt.Sprintf("broker %d holds %s (leader's size unknown)", r, byteCount(rsz))
	}
	behind := reassignplan.BytesBehind(lsz, rsz)
	lsz2, lok2 := second.size(leader, topic, part)
	rsz2, rok2 := second.size(r, topic, part)
	if !lok2 || !rok2 {
		return fmt.Sprintf("broker %d holds %s, %s behind leader %d", r, byteCount(rsz), byteCount(behind), leader)
	}
	behind2 := reassignplan.BytesBehind(lsz2, rsz2)
	copied := float64(rsz2-rsz) / second.at.Sub(first.at).Seconds()
	c := reassignplan.EstimateCatchUp(
		reassignplan.ProgressSample{At: first.at, Behind: behind},
		reassignplan.ProgressSample{At: second.at, Behind: behind2})
	return fmt.Sprintf("broker %d holds %s, %s behind leader %d, copying %s/s, %s",
		r, byteCount(rsz2), byteCount(behind2), leader, byteCount(int64(max(0, copied))), catchUpLeft(c))
}

// catchUpLeft says how long the copying has left, for a progress line.
func catchUpLeft(c reassignplan.CatchUp) string {
	switch {
	case c.Known && c.Left == 0:
		return "caught up"
	case c.Known:
		return "about " + c.Left.String() + " left"
	default:
		return "not gaining on the leader"
	}
}

// alterLogDirs sends each broker named with a log directory in the plan's
// log_dirs its AlterReplicaLogDirs. REPLICA_NOT_AVAILABLE is what a broker
// answers for a replica the reassignment has not created there yet: it
// remembers the directory for it.
func alterLogDirs(ctx context.Context, adm *kadm.Client, out io.Writer, p reassignplan.Plan) error {
	byBroker := map[int32]kadm.AlterReplicaLogDirsReq{}
	for _, a := range p.Partitions {
		for i, d := range a.LogDirs {
			if d == reassignplan.AnyLogDir {
				continue
			}
			req := byBroker[a.Replicas[i]]
			req.Add(d, kadm.TopicsSet{a.Topic: {a.Partition: {}}})
			byBroker[a.Replicas[i]] = req
		}
	}
	brokers := slices.Sorted(maps.Keys(byBroker))
	var started, failed []string
	for _, b := range brokers {
		res, err := adm.AlterBrokerReplicaLogDirs(ctx, b, byBroker[b])
		if err != nil {
			return fmt.Errorf("alter replica log dirs of broker %d: %w", b, explainError(err))
		}
		res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			name := fmt.Sprintf("%s-%d-%d", r.Topic, r.Partition, r.Broker)
			switch {
			case r.Err == nil, errors.Is(r.Err, kerr.ReplicaNotAvailable):
				started = append(started, name)
			default:
				failed = append(failed, fmt.Sprintf("%s to %s: %v", name, r.Dir, explainError(r.Err)))
			}
		})
	}
	if len(started) > 0 {
		slices.Sort(started)
		fmt.Fprintf(out, "Successfully started log directory move for: %s\n", strings.Join(started, ","))
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		return fmt.Errorf("%d log directory moves refused:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}
