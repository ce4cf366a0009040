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
// DescribeCluster, Metadata, ListPartitionReassignments and every
// broker's DescribeLogDirs with the same pure core the controller runs; --execute submits the moves as
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
	diskPct := fs.Int("disk-imbalance-percentage", brokerDefault("replica.balance.disk.imbalance.percentage"), "move replicas when a broker's disk load is off the mean by more than this (replica.balance.disk.imbalance.percentage)")
	diskMin := fs.Int64("disk-imbalance-min-bytes", int64(brokerDefault("replica.balance.disk.imbalance.min.bytes")), "and by at least this many bytes (replica.balance.disk.imbalance.min.bytes)")
	maxUsage := fs.Int("max-disk-usage-percent", brokerDefault("replica.balance.max.disk.usage.percent"), "never fill a broker's log directories beyond this, and move replicas off one that is (replica.balance.max.disk.usage.percent)")
	logDirs := fs.Bool("log-dirs", true, "also even out each broker's log directories with AlterReplicaLogDirs, one move per broker (replica.balance.log.dirs.enable)")
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
	if *maxMoves < 1 || *pct < 0 || *diskPct < 0 || *diskMin < 0 {
		return errors.New("--max-concurrent-moves must be at least 1, --imbalance-percentage, --disk-imbalance-percentage and --disk-imbalance-min-bytes at least 0")
	}
	if *maxUsage < 1 || *maxUsage > 100 {
		return errors.New("--max-disk-usage-percent must be between 1 and 100")
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
	// Log sizes and disk space as the controller's balancer gathers them; a
	// broker that does not answer takes no replica (its room is unknown),
	// and with no answer at all replica counts alone decide, as in the
	// controller.
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		fmt.Fprintf(s.err, "Log directories not described by every broker (%v): brokers without an answer take no replica (with no answer at all, replica counts alone decide).\n", explainError(err))
	}
	reports := logDirReports(dirs)
	balancer.Apply(brokers, parts, reports)
	cfg := balancer.Config{MaxConcurrentMoves: *maxMoves, ImbalancePercent: *pct,
		DiskImbalancePercent: *diskPct, DiskMinImbalanceBytes: *diskMin, MaxDiskUsagePercent: *maxUsage}
	if !*offFenced {
		cfg.UnavailableTimeout = 1<<63 - 1
	}
	plan := balancer.Decide(brokers, parts, cfg)
	var dirMoves []balancer.DirMove
	if *logDirs {
		// As the controller: a partition moving between brokers, already
		// or by this plan, is not moved within one as well.
		skip := func(tp balancer.TopicPartition) bool {
			if _, ok := moving[tp.Topic][tp.Partition]; ok {
				return true
			}
			return slices.ContainsFunc(plan.Moves, func(m balancer.Move) bool { return m.Topic == tp.Topic && m.Partition == tp.Partition })
		}
		dirMoves = balancer.DecideDirs(reports, skip, cfg)
	}
	printBalancePlan(s.out, brokers, parts, plan, dirMoves)
	if *dryRun {
		return nil
	}
	if err := startDirMoves(ctx, adm, s.out, dirMoves); err != nil {
		return err
	}
	if len(plan.Moves) == 0 {
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

// logDirReports are the brokers' DescribeLogDirs answers as the balancer
// reads them (ctrlcore.ReportOf for the controller's).
func logDirReports(dirs kadm.DescribedAllLogDirs) map[int32]balancer.Report {
	out := map[int32]balancer.Report{}
	for id, ds := range dirs {
		var rb balancer.ReportBuilder
		for _, d := range ds.Sorted() {
			rb.Dir(d.Dir, d.TotalBytes, d.UsableBytes, d.Err != nil)
			if d.Err != nil {
				continue
			}
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) { rb.Replica(p.Topic, p.Partition, p.Size, p.IsFuture) })
		}
		out[id] = rb.Report()
	}
	return out
}

// startDirMoves sends each broker its moves between its log directories
// (AlterReplicaLogDirs), as the controller's balancer does.
func startDirMoves(ctx context.Context, adm *kadm.Client, out io.Writer, moves []balancer.DirMove) error {
	var failed []string
	for _, m := range moves {
		var req kadm.AlterReplicaLogDirsReq
		req.Add(m.To, kadm.TopicsSet{m.Topic: {m.Partition: {}}})
		res, err := adm.AlterBrokerReplicaLogDirs(ctx, m.Broker, req)
		if err != nil {
			return fmt.Errorf("alter replica log dirs of broker %d: %w", m.Broker, explainError(err))
		}
		res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			if r.Err != nil {
				failed = append(failed, fmt.Sprintf("%s-%d on broker %d: %v", r.Topic, r.Partition, m.Broker, r.Err))
				return
			}
			fmt.Fprintf(out, "Started moving broker %d's replica of %s-%d to %s\n", m.Broker, r.Topic, r.Partition, m.To)
		})
	}
	if len(failed) > 0 {
		return fmt.Errorf("some moves between log directories failed to start:\n%s", strings.Join(failed, "\n"))
	}
	return nil
}

func printBalancePlan(out io.Writer, brokers []balancer.Broker, parts []balancer.Partition, plan balancer.Plan, dirMoves []balancer.DirMove) {
	fmt.Fprintln(out, "Brokers (replicas; bytes of the partitions assigned; log-directory volume used of total):")
	for _, l := range balancer.Loads(brokers, parts) {
		state := ""
		if i := slices.IndexFunc(brokers, func(b balancer.Broker) bool { return b.ID == l.ID }); !brokers[i].Available {
			state = " (fenced)"
		}
		disk := "disk unknown"
		if d := l.Disk; d != nil {
			disk = fmt.Sprintf("%s of %s used (%.1f%%), assigned %.1f%%", balancer.FormatBytes(d.Total-d.Usable), balancer.FormatBytes(d.Total),
				100*float64(d.Total-d.Usable)/float64(d.Total), 100*float64(l.Bytes)/float64(d.Total))
		}
		fmt.Fprintf(out, "  broker %d: %d replicas, %s; %s%s\n", l.ID, l.Replicas, balancer.FormatBytes(l.Bytes), disk, state)
	}
	fmt.Fprintf(out, "Reassignments in progress: %d\n", plan.InFlight)
	if len(plan.Moves) == 0 && len(plan.Elections) == 0 && len(dirMoves) == 0 {
		fmt.Fprintln(out, "The cluster is balanced: nothing to move.")
		return
	}
	for _, m := range plan.Moves {
		fmt.Fprintln(out, m.String())
	}
	for _, m := range dirMoves {
		fmt.Fprintln(out, m.String())
	}
	for _, e := range plan.Elections {
		fmt.Fprintln(out, e.String())
	}
}
