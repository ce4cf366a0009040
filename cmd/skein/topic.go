package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	commands["topic"] = command{summary: "create, list, describe, alter and delete topics (like kafka-topics)", run: clientCommand(runTopic)}
}

const topicUsage = "usage: skein topic create|list|describe|alter|delete|producers [flags] [topic...]"

func runTopic(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, topicUsage, map[string]clientRun{
		"create":    runTopicCreate,
		"list":      runTopicList,
		"describe":  runTopicDescribe,
		"alter":     runTopicAlter,
		"delete":    runTopicDelete,
		"producers": runTopicProducers,
	})
}

// addTopicFlags registers --bootstrap-server, --topic and --timeout.
func addTopicFlags(fs *flag.FlagSet) adminFlags {
	return addAdminFlags(fs, "topic", "topic name (topics may also be given as arguments)")
}

func runTopicCreate(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein topic create", s)
	tf := addTopicFlags(fs)
	partitions := fs.Int("partitions", -1, "number of partitions (-1: the broker's num.partitions)")
	replicationFactor := fs.Int("replication-factor", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	var configs keyValuesFlag
	fs.Var(&configs, "config", "topic property key=value (repeatable), e.g. --config retention.ms=86400000")
	names, err := tf.names(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("name the topic to create: skein topic create <topic> [--partitions N] [--replication-factor N] [--config k=v]")
	}
	if *partitions == 0 || *partitions < -1 || *partitions > math.MaxInt32 {
		return fmt.Errorf("--partitions %d: want a positive number, or -1 for the broker default", *partitions)
	}
	if *replicationFactor == 0 || *replicationFactor < -1 || *replicationFactor > math.MaxInt16 {
		return fmt.Errorf("--replication-factor %d: want a positive number, or -1 for the broker default", *replicationFactor)
	}
	cfg, err := uniqueConfigs(configs)
	if err != nil {
		return err
	}
	adm, ctx, done, err := tf.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	resps, err := adm.CreateTopics(ctx, int32(*partitions), int16(*replicationFactor), cfg, names...)
	if err != nil {
		return fmt.Errorf("create topics: %w", explainError(err))
	}
	var failed []error
	for _, name := range names {
		r, ok := resps[name]
		switch {
		case !ok:
			failed = append(failed, fmt.Errorf("create topic %q: the cluster did not answer for it", name))
		case r.Err != nil:
			failed = append(failed, fmt.Errorf("create topic %q: %w", name, withBrokerMessage(r.Err, r.ErrMessage)))
		default:
			fmt.Fprintf(s.out, "Created topic %s (%s, replication factor %d).\n", name, plural(int(r.NumPartitions), "partition"), r.ReplicationFactor)
		}
	}
	return errors.Join(failed...)
}

// uniqueConfigs turns repeated --config flags into the map kadm takes,
// refusing a key given twice (which value was meant is unclear).
func uniqueConfigs(kvs keyValuesFlag) (map[string]*string, error) {
	out := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		if _, dup := out[kv.key]; dup {
			return nil, fmt.Errorf("--config %s is given more than once", kv.key)
		}
		out[kv.key] = kadm.StringPtr(kv.value)
	}
	return out, nil
}

func runTopicList(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein topic list", s)
	tf := addTopicFlags(fs)
	names, err := tf.names(fs, args)
	if err != nil {
		return err
	}
	adm, ctx, done, err := tf.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	topics, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("list topics: %w", explainError(err))
	}
	var failed []error
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICATION-FACTOR")
	for _, t := range topics.Sorted() {
		if t.Err != nil {
			failed = append(failed, fmt.Errorf("list topic %q: %w", t.Topic, t.Err))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\n", t.Topic, len(t.Partitions), t.Partitions.NumReplicas())
	}
	return errors.Join(append(failed, tw.Flush())...)
}

func runTopicDescribe(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein topic describe", s)
	tf := addTopicFlags(fs)
	onlyUnderReplicated := fs.Bool("under-replicated-partitions", false, "show only partitions whose ISR is smaller than their replica set")
	onlyUnderMinISR := fs.Bool("under-min-isr-partitions", false, "show only partitions whose ISR is smaller than min.insync.replicas")
	names, err := tf.names(fs, args)
	if err != nil {
		return err
	}
	adm, ctx, done, err := tf.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	md, err := adm.Metadata(ctx, names...)
	if err != nil {
		return fmt.Errorf("describe topics: %w", explainError(err))
	}
	md.Topics.FilterInternal()
	var failed []error
	var found []string
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			failed = append(failed, fmt.Errorf("describe topic %q: %w", t.Topic, t.Err))
			continue
		}
		found = append(found, t.Topic)
	}
	configs, err := topicConfigs(ctx, adm, found)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, found...)
	if err != nil {
		return fmt.Errorf("list high watermarks: %w", explainError(err))
	}
	filter := func(h partitionHealth) bool {
		if !*onlyUnderReplicated && !*onlyUnderMinISR {
			return true
		}
		return (*onlyUnderReplicated && h.underReplicated) || (*onlyUnderMinISR && h.underMinISR)
	}
	first := true
	for _, name := range found {
		if printTopicDescription(s.out, md.Topics[name], configs[name], ends, filter, first) {
			first = false
		}
	}
	return errors.Join(failed...)
}

// describedConfigs is what describe shows of a topic's configs: the
// effective min.insync.replicas and the values set on the topic itself.
type describedConfigs struct {
	minISR int
	set    []string // "key=value", sorted
}

func topicConfigs(ctx context.Context, adm *kadm.Client, topics []string) (map[string]describedConfigs, error) {
	out := make(map[string]describedConfigs, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", explainError(err))
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("describe configs of topic %q: %w", rc.Name, withBrokerMessage(rc.Err, rc.ErrMessage))
		}
		var dc describedConfigs
		for _, c := range rc.Configs {
			if c.Key == "min.insync.replicas" {
				n, err := strconv.Atoi(c.MaybeValue())
				if err != nil {
					return nil, fmt.Errorf("topic %q: min.insync.replicas %q is not a number", rc.Name, c.MaybeValue())
				}
				dc.minISR = n
			}
			if c.Source != kmsg.ConfigSourceDynamicTopicConfig {
				continue
			}
			value := c.MaybeValue()
			if c.Sensitive {
				value = "<sensitive>"
			}
			dc.set = append(dc.set, c.Key+"="+value)
		}
		sort.Strings(dc.set)
		out[rc.Name] = dc
	}
	return out, nil
}

// printTopicDescription prints one topic as kafka-topics --describe does:
// a summary line, then a table of its partitions. It reports whether it
// printed anything (a filter may leave nothing to show).
func printTopicDescription(out io.Writer, t kadm.TopicDetail, cfg describedConfigs, ends kadm.ListedOffsets, show func(partitionHealth) bool, first bool) bool {
	var rows []string
	for _, p := range t.Partitions.Sorted() {
		h := assessPartition(p, cfg.minISR)
		if !show(h) {
			continue
		}
		hw := "-"
		if end, ok := ends.Lookup(t.Topic, p.Partition); ok {
			if end.Err != nil {
				hw = errorName(end.Err)
			} else {
				hw = strconv.FormatInt(end.Offset, 10)
			}
		}
		rows = append(rows, fmt.Sprintf("%d\t%s\t%d\t%s\t%s\t%s\t%s\n", p.Partition, leaderCell(p.Leader), p.LeaderEpoch,
			int32List(p.Replicas), int32List(p.ISR), hw, h))
	}
	if len(rows) == 0 && len(t.Partitions) > 0 {
		return false
	}
	if !first {
		fmt.Fprintln(out)
	}
	configs := strings.Join(cfg.set, ",")
	if configs == "" {
		configs = "-"
	}
	fmt.Fprintf(out, "Topic: %s  TopicId: %s  PartitionCount: %d  ReplicationFactor: %d  MinInSyncReplicas: %d  Configs: %s\n",
		t.Topic, t.ID, len(t.Partitions), t.Partitions.NumReplicas(), cfg.minISR, configs)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tLEADER-EPOCH\tREPLICAS\tISR\tHIGH-WATERMARK\tSTATUS")
	for _, r := range rows {
		fmt.Fprint(tw, r)
	}
	tw.Flush()
	return true
}

func runTopicAlter(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein topic alter", s)
	tf := addTopicFlags(fs)
	partitions := fs.Int("partitions", 0, "grow the topic to this many partitions (partitions cannot be removed)")
	var setConfigs keyValuesFlag
	fs.Var(&setConfigs, "config", "set a topic property key=value (repeatable)")
	var deleteConfigs stringsFlag
	fs.Var(&deleteConfigs, "delete-config", "remove a topic property, reverting it to the broker default (repeatable)")
	names, err := tf.names(fs, args)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return errors.New("name exactly one topic to alter: skein topic alter <topic> [--partitions N] [--config k=v] [--delete-config k]")
	}
	name := names[0]
	if len(setConfigs) == 0 && len(deleteConfigs) == 0 && *partitions == 0 {
		return errors.New("nothing to alter: give --partitions, --config or --delete-config")
	}
	if *partitions < 0 || *partitions > math.MaxInt32 {
		return fmt.Errorf("--partitions %d: want a positive number", *partitions)
	}
	alters, err := configAlterations(setConfigs, deleteConfigs)
	if err != nil {
		return err
	}
	adm, ctx, done, err := tf.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	if len(alters) > 0 {
		resps, err := adm.AlterTopicConfigs(ctx, alters, name)
		if err != nil {
			return fmt.Errorf("alter configs of topic %q: %w", name, explainError(err))
		}
		r, err := resps.On(name, nil)
		if err == nil {
			err = withBrokerMessage(r.Err, r.ErrMessage)
		}
		if err != nil {
			return fmt.Errorf("alter configs of topic %q: %w", name, err)
		}
		fmt.Fprintf(s.out, "Altered configs of topic %s: %s.\n", name, describeAlterations(alters))
	}
	if *partitions > 0 {
		resps, err := adm.UpdatePartitions(ctx, *partitions, name)
		if err != nil {
			return fmt.Errorf("grow topic %q to %d partitions: %w", name, *partitions, explainError(err))
		}
		r, err := resps.On(name, nil)
		if err == nil {
			err = withBrokerMessage(r.Err, r.ErrMessage)
		}
		if err != nil {
			return fmt.Errorf("grow topic %q to %d partitions: %w", name, *partitions, err)
		}
		fmt.Fprintf(s.out, "Topic %s now has %s.\n", name, plural(*partitions, "partition"))
	}
	return nil
}

// configAlterations turns --config and --delete-config into incremental
// alterations, refusing a key named twice.
func configAlterations(set keyValuesFlag, del stringsFlag) ([]kadm.AlterConfig, error) {
	seen := map[string]bool{}
	var out []kadm.AlterConfig
	for _, kv := range set {
		if seen[kv.key] {
			return nil, fmt.Errorf("config %s is given more than once", kv.key)
		}
		seen[kv.key] = true
		out = append(out, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv.key, Value: kadm.StringPtr(kv.value)})
	}
	for _, k := range del {
		if seen[k] {
			return nil, fmt.Errorf("config %s is given more than once", k)
		}
		seen[k] = true
		out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return out, nil
}

func describeAlterations(alters []kadm.AlterConfig) string {
	parts := make([]string, 0, len(alters))
	for _, a := range alters {
		if a.Op == kadm.DeleteConfig {
			parts = append(parts, "deleted "+a.Name)
			continue
		}
		parts = append(parts, "set "+a.Name+"="+*a.Value)
	}
	return strings.Join(parts, ", ")
}

func runTopicDelete(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein topic delete", s)
	tf := addTopicFlags(fs)
	names, err := tf.names(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("name the topics to delete: skein topic delete <topic> [<topic>]")
	}
	adm, ctx, done, err := tf.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	resps, err := adm.DeleteTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("delete topics: %w", explainError(err))
	}
	var failed []error
	for _, name := range names {
		r, ok := resps[name]
		switch {
		case !ok:
			failed = append(failed, fmt.Errorf("delete topic %q: the cluster did not answer for it", name))
		case r.Err != nil:
			failed = append(failed, fmt.Errorf("delete topic %q: %w", name, withBrokerMessage(r.Err, r.ErrMessage)))
		default:
			fmt.Fprintf(s.out, "Deleted topic %s.\n", name)
		}
	}
	return errors.Join(failed...)
}

// plural is "1 partition", "3 partitions".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
