package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/reassignplan"
)

func init() {
	commands["broker"] = command{summary: "empty a broker of replicas and remove it (decommission, recommission, unregister)", run: clientCommand(runBroker)}
}

const brokerUsage = "usage: skein broker decommission|recommission|unregister --broker N [flags]"

func runBroker(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, brokerUsage, map[string]clientRun{
		"decommission": runDecommission,
		"recommission": runRecommission,
		"unregister":   runUnregister,
	})
}

// brokerCommand is what the broker subcommands share: the cluster flags,
// --broker and --timeout, and the clients they open.
type brokerCommand struct {
	fs        *flag.FlagSet
	bootstrap *clusterFlags
	timeout   *time.Duration
	broker    *int
}

func newBrokerCommand(name string, s streams) *brokerCommand {
	fs := newFlagSet("skein broker "+name, s)
	return &brokerCommand{fs: fs, bootstrap: clusterFlag(fs),
		timeout: fs.Duration("timeout", adminTimeout, "give up on each request to the cluster after this long"),
		broker:  fs.Int("broker", -1, "the broker id")}
}

func (c *brokerCommand) parse(args []string) (int32, error) {
	if err := c.fs.Parse(args); err != nil {
		return 0, err
	}
	if c.fs.NArg() > 0 {
		return 0, fmt.Errorf("unexpected arguments %q", c.fs.Args())
	}
	if *c.broker < 0 {
		return 0, errors.New("--broker N is required")
	}
	return int32(*c.broker), nil
}

// start parses args and opens the clients; the caller closes cl.
func (c *brokerCommand) start(args []string) (int32, *kgo.Client, *kadm.Client, error) {
	id, err := c.parse(args)
	if err != nil {
		return 0, nil, nil, err
	}
	cl, err := newClient(c.bootstrap)
	if err != nil {
		return 0, nil, nil, err
	}
	return id, cl, kadm.NewClient(cl), nil
}

// step bounds one round of requests by --timeout.
func (c *brokerCommand) step(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, *c.timeout)
}

// runDecommission plans moving every replica off a broker (each replaced,
// in its place, by a live broker not already in the partition, spreading
// racks, then load) and, with --execute, starts it, follows it with
// progress lines until the broker holds no replica, and unregisters the
// broker (UnregisterBroker) unless --unregister=false.
func runDecommission(ctx context.Context, args []string, s streams) error {
	c := newBrokerCommand("decommission", s)
	execute := c.fs.Bool("execute", false, "start the reassignments, wait for them and unregister the broker (without it, only print the plan)")
	unregister := c.fs.Bool("unregister", true, "with --execute, unregister the broker once it holds no replica")
	poll := c.fs.Duration("poll", time.Second, "with --execute, how often to report progress")
	throttle := c.fs.Int64("throttle", -1, "with --execute, throttle the copying to this many bytes/s (as skein partitions reassign --execute --throttle); removed once the broker holds no replica")
	gone, cl, adm, err := c.start(args)
	if err != nil {
		return err
	}
	defer cl.Close()
	if *poll <= 0 {
		return errors.New("--poll must be positive")
	}
	if *throttle != -1 && (!*execute || *throttle <= 0) {
		return errors.New("--throttle takes a positive number of bytes/s, with --execute")
	}
	sctx, cancel := c.step(ctx)
	defer cancel()
	md, err := adm.Metadata(sctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", explainError(err))
	}
	var live []int32
	racks := map[int32]string{}
	for _, b := range md.Brokers {
		if b.Rack != nil {
			racks[b.NodeID] = *b.Rack
		}
		if b.NodeID != gone {
			live = append(live, b.NodeID)
		}
	}
	names := md.Topics.Names()
	slices.Sort(names)
	current, err := currentAssignment(sctx, adm, names)
	if err != nil {
		return err
	}
	plan, err := reassignplan.Decommission(current, gone, live, racks)
	if err != nil {
		return err
	}
	if len(plan) == 0 {
		fmt.Fprintf(s.out, "Broker %d holds no replica.\n", gone)
	} else {
		fmt.Fprintf(s.out, "Moving %d replicas off broker %d\n%s\n\n", len(plan), gone, reassignplan.Format(plan))
	}
	if !*execute {
		if len(plan) > 0 {
			fmt.Fprintln(s.out, "Nothing changed: run again with --execute, or save the plan for skein partitions reassign --execute --plan FILE.")
		}
		return nil
	}
	if len(plan) > 0 {
		moves := reassignplan.Plan{Version: 1, Partitions: plan}
		if err := reassignExecute(sctx, adm, s.out, moves, *throttle); err != nil {
			return err
		}
		if err := awaitEmptied(ctx, c, adm, s.out, gone, *poll); err != nil {
			return err
		}
		if *throttle > 0 {
			rctx, cancel := c.step(ctx)
			err := removeThrottles(rctx, adm, s.out, planTopics(moves))
			cancel()
			if err != nil {
				return err
			}
		}
	}
	if !*unregister {
		return nil
	}
	return unregisterBroker(ctx, c, cl, s.out, gone)
}

// awaitEmptied reports, every poll, how many partitions still list broker
// gone and how many bytes its replacements have left to copy, until none
// lists it. A move that cannot finish (a replacement down) keeps it
// waiting: Ctrl-C leaves the moves running, recommission cancels them.
func awaitEmptied(ctx context.Context, c *brokerCommand, adm *kadm.Client, out io.Writer, gone int32, poll time.Duration) error {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var prev reassignplan.ProgressSample
	for {
		held, left, err := decommissionProgress(ctx, c, adm, gone)
		if err != nil {
			return err
		}
		if len(held) == 0 {
			fmt.Fprintf(out, "Broker %d holds no replica.\n", gone)
			return nil
		}
		now := reassignplan.ProgressSample{At: time.Now(), Behind: left}
		eta := ""
		if !prev.At.IsZero() {
			c := reassignplan.EstimateCatchUp(prev, now)
			eta = fmt.Sprintf(", closing at %s/s, %s", byteCount(int64(max(0, c.BytesPerSecond))), catchUpLeft(c))
		}
		prev = now
		fmt.Fprintf(out, "Broker %d: %d partitions still to move (%s); %s left to copy%s.\n", gone, len(held), shortList(held), byteCount(left), eta)
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker %d still holds replicas of %d partitions: %w", gone, len(held), ctx.Err())
		case <-tick.C:
		}
	}
}

// decommissionProgress lists the partitions still listing broker gone and
// the bytes the added replicas of their reassignments are behind their
// leaders (DescribeLogDirs).
func decommissionProgress(ctx context.Context, c *brokerCommand, adm *kadm.Client, gone int32) (held []string, behind int64, err error) {
	ctx, cancel := c.step(ctx)
	defer cancel()
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("metadata: %w", explainError(err))
	}
	held, set := partitionsWithReplica(md, gone)
	if len(held) == 0 {
		return nil, 0, nil
	}
	moving, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, 0, fmt.Errorf("list partition reassignments: %w", explainError(err))
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil, 0, fmt.Errorf("log dirs: %w", explainError(err))
	}
	for _, ps := range moving {
		for _, m := range ps {
			leader := md.Topics[m.Topic].Partitions[m.Partition].Leader
			ld, _ := dirs[leader].LookupPartition(m.Topic, m.Partition)
			for _, r := range m.AddingReplicas {
				rd, _ := dirs[r].LookupPartition(m.Topic, m.Partition)
				behind += reassignplan.BytesBehind(ld.Size, rd.Size)
			}
		}
	}
	return held, behind, nil
}

// runRecommission cancels the reassignments moving replicas off a broker
// (those whose removing replicas include it, as decommission starts them):
// their partitions return to their original replicas, the broker among them.
func runRecommission(ctx context.Context, args []string, s streams) error {
	c := newBrokerCommand("recommission", s)
	back, cl, adm, err := c.start(args)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := c.step(ctx)
	defer cancel()
	// Every reassignment (null topics), which kadm does not ask for.
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = int32(c.timeout.Milliseconds())
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = withBrokerMessage(kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	if err != nil {
		return fmt.Errorf("list partition reassignments: %w", explainError(err))
	}
	var cancels []reassignplan.Assignment
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if slices.Contains(p.RemovingReplicas, back) {
				cancels = append(cancels, reassignplan.Assignment{Topic: t.Topic, Partition: p.Partition})
			}
		}
	}
	if len(cancels) == 0 {
		fmt.Fprintf(s.out, "No reassignment is moving replicas off broker %d.\n", back)
		return nil
	}
	reassignplan.Sort(cancels)
	return reassignCancel(ctx, adm, s.out, reassignplan.Plan{Version: 1, Partitions: cancels})
}

// runUnregister removes a broker's registration (UnregisterBroker). It
// first lists the partitions that still name the broker as a replica and
// refuses if there are any; --force sends the request anyway, after a
// warning, for a broker that is gone for good: the controller still refuses
// a running broker holding replicas, so --force removes only a stopped
// (fenced) one, whose partitions keep naming it until they are reassigned.
func runUnregister(ctx context.Context, args []string, s streams) error {
	c := newBrokerCommand("unregister", s)
	force := c.fs.Bool("force", false, "unregister even though partitions still name the broker as a replica (the controller accepts it only for a stopped broker)")
	id, cl, adm, err := c.start(args)
	if err != nil {
		return err
	}
	defer cl.Close()
	sctx, cancel := c.step(ctx)
	defer cancel()
	md, err := adm.Metadata(sctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", explainError(err))
	}
	if held, _ := partitionsWithReplica(md, id); len(held) > 0 {
		if !*force {
			return fmt.Errorf("broker %d still holds replicas of %d partitions (%s): move them off first with skein broker decommission --broker %d --execute, or, for a broker gone for good, use --force", id, len(held), shortList(held), id)
		}
		fmt.Fprintf(s.err, "warning: broker %d is still a replica of %d partitions (%s); they keep naming it until reassigned.\n", id, len(held), shortList(held))
	}
	return unregisterBroker(ctx, c, cl, s.out, id)
}

// unregisterBroker sends UnregisterBroker for id. A broker still running
// registers again at its next heartbeat, so it says so when the broker was
// alive just before: listed in a Metadata answer without topics, asked
// afresh (not from the client's cache). Such an answer lists only unfenced
// brokers; one carrying topics also lists a broker fenced moments ago whose
// replicas it names (api.FencedListedMs), and one asked after the
// unregister may leave out a running broker that has not registered again
// yet.
func unregisterBroker(ctx context.Context, c *brokerCommand, cl *kgo.Client, out io.Writer, id int32) error {
	ctx, cancel := c.step(ctx)
	defer cancel()
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Topics = []kmsg.MetadataRequestTopic{}
	mresp, err := mreq.RequestWith(ctx, cl)
	running := err == nil && slices.ContainsFunc(mresp.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == id })
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("unregister broker %d: %w", id, explainError(err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("unregister broker %d: %w", id, withBrokerMessage(err, deref(resp.ErrorMessage)))
	}
	fmt.Fprintf(out, "Broker %d unregistered.\n", id)
	if running {
		fmt.Fprintf(out, "Broker %d is still running: stop its process, or it registers again at its next heartbeat.\n", id)
	}
	return nil
}

// partitionsWithReplica lists the partitions of md whose replicas include
// broker id, as names and as a set.
func partitionsWithReplica(md kadm.Metadata, id int32) ([]string, kadm.TopicsSet) {
	var held []string
	set := kadm.TopicsSet{}
	for _, t := range md.Topics.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			if slices.Contains(p.Replicas, id) {
				held = append(held, fmt.Sprintf("%s-%d", t.Topic, p.Partition))
				set.Add(t.Topic, p.Partition)
			}
		}
	}
	return held, set
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// shortList names up to ten items, then how many more there are.
func shortList(names []string) string {
	const limit = 10
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:limit], ", ") + fmt.Sprintf(" and %d more", len(names)-limit)
}
