package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// runGroupResetOffsets is skein group reset-offsets: it moves a group's
// committed offsets. Like kafka-consumer-groups it only prints the plan
// unless --execute is given, and it refuses a group that has members,
// whose next commit would overwrite the reset anyway.
func runGroupResetOffsets(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein group reset-offsets", s)
	gf := addGroupFlags(fs)
	var topics topicSelectionsFlag
	fs.Var(&topics, "topic", "topic to reset, or topic:0,1,2 for some of its partitions (repeatable)")
	allTopics := fs.Bool("all-topics", false, "reset every partition the group has committed offsets for")
	var tf resetTargetFlags
	fs.BoolVar(&tf.earliest, "to-earliest", false, "reset to the log start")
	fs.BoolVar(&tf.latest, "to-latest", false, "reset to the log end")
	fs.Int64Var(&tf.offset, "to-offset", 0, "reset to this offset (moved into the log if outside it)")
	fs.StringVar(&tf.datetime, "to-datetime", "", "reset to the first record at or after this time: RFC 3339 (2026-11-30T14:00:00Z) or Unix milliseconds")
	execute := fs.Bool("execute", false, "commit the new offsets (without it, only print the plan)")
	fs.Bool("dry-run", true, "only print the plan, which is what happens without --execute")
	names, err := gf.names(fs, args)
	if err != nil {
		return err
	}
	tf.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { tf.set[f.Name] = true })
	if len(names) != 1 {
		return errors.New("name exactly one group: skein group reset-offsets --group <group> --topic <topic> --to-earliest|--to-latest|--to-offset N|--to-datetime T [--execute]")
	}
	group := names[0]
	if len(topics) == 0 && !*allTopics {
		return errors.New("name the partitions to reset: --topic <topic>[:partitions] (repeatable) or --all-topics")
	}
	if len(topics) > 0 && *allTopics {
		return errors.New("give either --topic or --all-topics, not both")
	}
	if tf.set["execute"] && tf.set["dry-run"] {
		return errors.New("give either --execute or --dry-run, not both")
	}
	target, err := tf.target()
	if err != nil {
		return err
	}
	adm, ctx, done, err := gf.connect(ctx)
	if err != nil {
		return err
	}
	defer done()

	if err := checkGroupInactive(ctx, adm, group); err != nil {
		return err
	}
	var partitions []topicPartition
	if *allTopics {
		partitions, err = committedPartitions(ctx, adm, group)
	} else {
		partitions, err = selectedPartitions(ctx, adm, topics)
	}
	if err != nil {
		return err
	}
	if len(partitions) == 0 {
		return fmt.Errorf("group %q has no committed offsets; name the partitions to reset with --topic", group)
	}
	bounds, atTime, err := listResetOffsets(ctx, adm, partitions, target)
	if err != nil {
		return err
	}
	plan, err := planResets(target, bounds, atTime)
	if err != nil {
		return err
	}
	for _, r := range plan {
		if r.note != "" {
			fmt.Fprintf(s.err, "Note: %s.\n", r.note)
		}
	}
	if *execute {
		if err := commitResets(ctx, adm, group, plan); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
	for _, r := range plan {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", group, r.topic, r.partition, r.offset)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !*execute {
		fmt.Fprintln(s.err, "Dry run: no offsets were changed. Add --execute to commit these offsets.")
	}
	return nil
}

// checkGroupInactive refuses a group with members, as Kafka does: only an
// Empty group (or one that does not exist yet) may have its offsets reset.
func checkGroupInactive(ctx context.Context, adm *kadm.Client, group string) error {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", group, explainError(err))
	}
	g, ok := described[group]
	switch {
	case !ok || errors.Is(g.Err, kerr.GroupIDNotFound):
		return nil
	case g.Err != nil:
		return fmt.Errorf("describe group %q: %w", group, withBrokerMessage(g.Err, g.ErrMessage))
	case g.State == groupStateEmpty || g.State == groupStateDead:
		return nil
	}
	return fmt.Errorf("offsets of group %q can only be reset while the group is inactive, but it is %s with %s; stop its consumers first",
		group, g.State, plural(len(g.Members), "member"))
}

// committedPartitions are the partitions the group has committed offsets
// for, for --all-topics.
func committedPartitions(ctx context.Context, adm *kadm.Client, group string) ([]topicPartition, error) {
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("fetch committed offsets of group %q: %w", group, explainError(err))
	}
	var out []topicPartition
	var failed []error
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			failed = append(failed, fmt.Errorf("committed offset of %s-%d: %w", o.Topic, o.Partition, o.Err))
			return
		}
		out = append(out, topicPartition{o.Topic, o.Partition})
	})
	return out, errors.Join(failed...)
}

// selectedPartitions resolves --topic values against the cluster's
// metadata, refusing unknown topics and partitions.
func selectedPartitions(ctx context.Context, adm *kadm.Client, topics topicSelectionsFlag) ([]topicPartition, error) {
	names := make([]string, 0, len(topics))
	for _, t := range topics {
		names = append(names, t.topic)
	}
	md, err := adm.Metadata(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("look up topics: %w", explainError(err))
	}
	var out []topicPartition
	for _, sel := range topics {
		td, ok := md.Topics[sel.topic]
		if !ok {
			return nil, fmt.Errorf("topic %q: the cluster did not answer for it", sel.topic)
		}
		if td.Err != nil {
			return nil, fmt.Errorf("topic %q: %w", sel.topic, td.Err)
		}
		if sel.partitions == nil {
			for p := range td.Partitions {
				out = append(out, topicPartition{sel.topic, p})
			}
			continue
		}
		for _, p := range sel.partitions {
			if _, ok := td.Partitions[p]; !ok {
				return nil, fmt.Errorf("topic %q has no partition %d (it has %s)", sel.topic, p, plural(len(td.Partitions), "partition"))
			}
			out = append(out, topicPartition{sel.topic, p})
		}
	}
	return out, nil
}

// listResetOffsets lists the log start and end of every partition, and
// for --to-datetime the first offset at or after the time.
func listResetOffsets(ctx context.Context, adm *kadm.Client, partitions []topicPartition, target resetTarget) (map[topicPartition]logBounds, map[topicPartition]int64, error) {
	topicSet := map[string]bool{}
	for _, tp := range partitions {
		topicSet[tp.topic] = true
	}
	topics := make([]string, 0, len(topicSet))
	for t := range topicSet {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, nil, fmt.Errorf("list log start offsets: %w", explainError(err))
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, nil, fmt.Errorf("list log end offsets: %w", explainError(err))
	}
	var times kadm.ListedOffsets
	if target.kind == resetToDatetime {
		if times, err = adm.ListOffsetsAfterMilli(ctx, target.millis, topics...); err != nil {
			return nil, nil, fmt.Errorf("list offsets by time: %w", explainError(err))
		}
	}
	lookup := func(l kadm.ListedOffsets, what string, tp topicPartition) (int64, error) {
		o, ok := l.Lookup(tp.topic, tp.partition)
		switch {
		case !ok:
			return 0, fmt.Errorf("list %s offset of %s-%d: the cluster did not answer for it", what, tp.topic, tp.partition)
		case o.Err != nil:
			return 0, fmt.Errorf("list %s offset of %s-%d: %w", what, tp.topic, tp.partition, o.Err)
		}
		return o.Offset, nil
	}
	bounds := make(map[topicPartition]logBounds, len(partitions))
	atTime := map[topicPartition]int64{}
	for _, tp := range partitions {
		var b logBounds
		if b.start, err = lookup(starts, "start", tp); err != nil {
			return nil, nil, err
		}
		if b.end, err = lookup(ends, "end", tp); err != nil {
			return nil, nil, err
		}
		bounds[tp] = b
		if times != nil {
			if atTime[tp], err = lookup(times, "by-time", tp); err != nil {
				return nil, nil, err
			}
		}
	}
	return bounds, atTime, nil
}

// commitResets commits the planned offsets for the group and fails if
// any partition was refused.
func commitResets(ctx context.Context, adm *kadm.Client, group string, plan []plannedReset) error {
	offsets := make(kadm.Offsets)
	for _, r := range plan {
		offsets.Add(kadm.Offset{Topic: r.topic, Partition: r.partition, At: r.offset, LeaderEpoch: -1})
	}
	resps, err := adm.CommitOffsets(ctx, group, offsets)
	if err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", group, explainError(err))
	}
	var failed []error
	for _, r := range plan {
		resp, ok := resps.Lookup(r.topic, r.partition)
		switch {
		case !ok:
			failed = append(failed, fmt.Errorf("commit offset of %s-%d: the cluster did not answer for it", r.topic, r.partition))
		case errors.Is(resp.Err, kerr.UnknownMemberID) || errors.Is(resp.Err, kerr.IllegalGeneration) || errors.Is(resp.Err, kerr.RebalanceInProgress):
			failed = append(failed, inWords(resp.Err, "commit offset of %s-%d: refused (%s): a consumer joined group %q meanwhile; stop it first", r.topic, r.partition, errorName(resp.Err), group))
		case resp.Err != nil:
			failed = append(failed, fmt.Errorf("commit offset of %s-%d: %w", r.topic, r.partition, resp.Err))
		}
	}
	return errors.Join(failed...)
}
