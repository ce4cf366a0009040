package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/skein-log/skein/internal/balancer"
	"github.com/skein-log/skein/internal/config"
)

// `skein cluster balance`: what the automatic balancer
// (auto.replica.balance.enable) would do now, computed here from
// DescribeCluster, Metadata and ListPartitionReassignments with the same
// pure core the controller runs; --execute submits the moves as
// reassignments, whether or not the controller's balancer is enabled.

// brokerDefault is a broker property's default, for the flags that mirror
// the controller's balancer settings.
func brokerDefault(name string) int {
	p, ok := config.LookupBroker(name)
	if !ok {
		panic("no broker property " + name)
	}
	v, err := strconv.Atoi(p.Default)
	if err != nil {
		panic(fmt.Sprintf("%s's default %q: %v", name, p.Default, err))
	}
	return v
}

func runClusterBalance(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein cluster balance", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	dryRun := fs.Bool("dry-run", false, "print the replica moves and leader elections the balancer would make now")
	execute := fs.Bool("execute", false, "start the moves as partition reassignments")
	maxMoves := fs.Int("max-concurrent-moves", brokerDefault("replica.balance.max.concurrent.moves"), "at most this many partitions reassigning at once (replica.balance.max.concurrent.moves)")
	pct := fs.Int("imbalance-percentage", brokerDefault("replica.imbalance.per.broker.percentage"), "move replicas when a broker is off the mean replica count by more than this (replica.imbalance.per.broker.percentage)")
	offFenced := fs.Bool("move-off-fenced", false, "treat fenced brokers as gone for good and move their replicas (the controller waits replica.balance.broker.unavailable.timeout.ms; this tool cannot know how long a broker has been fenced)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *dryRun == *execute {
		return errors.New("give exactly one of --dry-run, --execute")
	}
	if *maxMoves < 1 || *pct < 0 {
		return errors.New("--max-concurrent-moves must be at least 1 and --imbalance-percentage at least 0")
	}
	cl, adm, ctx, done, err := dialCluster(ctx, bootstrap, *timeout)
	if err != nil {
		return err
	}
	defer done()

	cluster, err := describeCluster(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe cluster from %s: %w", bootstrap, explainError(err))
	}
	md, err := adm.Metadata(ctx)
	if err != nil {
		return fmt.Errorf("metadata from %s: %w", bootstrap, explainError(err))
	}
	moving, err := adm.ListPartitionReassignments(ctx, nil)
	if err != nil {
		return fmt.Errorf("list partition reassignments: %w", explainError(err))
	}
	var brokers []balancer.Broker
	for _, b := range cluster.brokers {
		bb := balancer.Broker{ID: b.NodeID, Available: !b.IsFenced}
		if b.Rack != nil {
			bb.Rack = *b.Rack
		}
		brokers = append(brokers, bb)
	}
	var parts []balancer.Partition
	for _, t := range md.Topics.Sorted() {
		if t.IsInternal || t.Err != nil {
			continue
		}
		for _, p := range t.Partitions.Sorted() {
			_, reassigning := moving[t.Topic][p.Partition]
			parts = append(parts, balancer.Partition{Topic: t.Topic, Index: p.Partition, Replicas: p.Replicas, ISR: p.ISR,
				Leader: p.Leader, Reassigning: reassigning})
		}
	}
	cfg := balancer.Config{MaxConcurrentMoves: *maxMoves, ImbalancePercent: *pct}
	if !*offFenced {
		cfg.UnavailableTimeout = 1<<63 - 1
	}
	plan := balancer.Decide(brokers, parts, cfg)
	printBalancePlan(s.out, brokers, parts, plan)
	if *dryRun || len(plan.Moves) == 0 {
		return nil
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, m := range plan.Moves {
		req.Assign(m.Topic, m.Partition, m.Target)
	}
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("alter partition reassignments: %w", explainError(err))
	}
	started, _, failed := sortResults(res, nil)
	if len(started) > 0 {
		fmt.Fprintf(s.out, "Successfully started partition reassignments for %s\n", strings.Join(started, ","))
	}
	if len(failed) > 0 {
		return fmt.Errorf("some reassignments failed to start:\n%s", strings.Join(failed, "\n"))
	}
	return nil
}

func printBalancePlan(out io.Writer, brokers []balancer.Broker, parts []balancer.Partition, plan balancer.Plan) {
	load := map[int32]int{}
	for _, p := range parts {
		for _, r := range p.Replicas {
			load[r]++
		}
	}
	ids := make([]int32, 0, len(brokers))
	for _, b := range brokers {
		ids = append(ids, b.ID)
	}
	slices.Sort(ids)
	fmt.Fprintln(out, "Replicas per broker:")
	for _, id := range ids {
		state := ""
		if i := slices.IndexFunc(brokers, func(b balancer.Broker) bool { return b.ID == id }); !brokers[i].Available {
			state = " (fenced)"
		}
		fmt.Fprintf(out, "  broker %d: %d%s\n", id, load[id], state)
	}
	fmt.Fprintf(out, "Reassignments in progress: %d\n", plan.InFlight)
	if len(plan.Moves) == 0 && len(plan.Elections) == 0 {
		fmt.Fprintln(out, "The cluster is balanced: nothing to move.")
		return
	}
	for _, m := range plan.Moves {
		fmt.Fprintln(out, m.String())
	}
	for _, e := range plan.Elections {
		fmt.Fprintln(out, e.String())
	}
}
