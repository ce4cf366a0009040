package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	commands["cluster"] = command{summary: "describe the cluster: brokers, controller, partition health; log directories; the controller quorum; replica balance", run: clientCommand(runCluster)}
}

func runCluster(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, "usage: skein cluster describe|log-dirs|quorum|balance [flags]", map[string]clientRun{
		"balance":  runClusterBalance,
		"describe": runClusterDescribe,
		"log-dirs": runClusterLogDirs,
		"quorum":   runClusterQuorum,
	})
}

func runClusterDescribe(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein cluster describe", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cl, adm, ctx, done, err := dialCluster(ctx, bootstrap, *timeout)
	if err != nil {
		return err
	}
	defer done()

	md, err := adm.Metadata(ctx)
	if err != nil {
		return fmt.Errorf("metadata from %s: %w", bootstrap, explainError(err))
	}
	cluster, err := describeCluster(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe cluster from %s: %w", bootstrap, explainError(err))
	}
	configs, err := topicConfigs(ctx, adm, md.Topics.Names())
	if err != nil {
		return err
	}
	minISR := make(map[string]int, len(configs))
	for name, c := range configs {
		minISR[name] = c.minISR
	}
	printClusterDescription(s.out, md, cluster, minISR)
	return nil
}

// dialCluster is the client (raw, for DescribeCluster, and kadm's) and
// the bounded context of a cluster command; done closes both.
func dialCluster(ctx context.Context, bootstrap *clusterFlags, timeout time.Duration) (*kgo.Client, *kadm.Client, context.Context, func(), error) {
	cl, err := newClient(bootstrap)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return cl, adm, ctx, func() { cancel(); adm.Close() }, nil
}

// clusterView is DescribeCluster's answer: the active controller (Metadata
// names whichever broker answered, as Kafka does in KRaft mode) and every
// registered broker, with the fenced (registered but down) ones marked.
type clusterView struct {
	controller int32
	brokers    []kmsg.DescribeClusterResponseBroker
}

func describeCluster(ctx context.Context, cl *kgo.Client) (clusterView, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true // v2+; older brokers list live ones only
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return clusterView{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return clusterView{}, err
	}
	return clusterView{controller: resp.ControllerID, brokers: resp.Brokers}, nil
}

func printClusterDescription(out io.Writer, md kadm.Metadata, cluster clusterView, minISR map[string]int) {
	controller := "none"
	if cluster.controller >= 0 {
		controller = strconv.Itoa(int(cluster.controller))
	}
	clusterID := md.Cluster
	if clusterID == "" {
		clusterID = "-"
	}
	fmt.Fprintf(out, "Cluster ID:  %s\nController:  %s\n\n", clusterID, controller)

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tHOST:PORT\tRACK\tSTATUS")
	brokers := slices.Clone(cluster.brokers)
	slices.SortFunc(brokers, func(a, b kmsg.DescribeClusterResponseBroker) int { return cmp.Compare(a.NodeID, b.NodeID) })
	for _, b := range brokers {
		rack := "-"
		if b.Rack != nil && *b.Rack != "" {
			rack = *b.Rack
		}
		status := "up"
		if b.IsFenced {
			status = "down (registered, fenced)"
		}
		if b.NodeID == cluster.controller {
			status += ", active controller"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", b.NodeID, b.Host+":"+strconv.Itoa(int(b.Port)), rack, status)
	}
	tw.Flush()

	var total, offline, under, underMin int
	var unhealthy []kadm.PartitionDetail
	for _, t := range md.Topics.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			total++
			h := assessPartition(p, minISR[t.Topic])
			if h.offline {
				offline++
			}
			if h.underReplicated {
				under++
			}
			if h.underMinISR {
				underMin++
			}
			if !h.healthy() {
				unhealthy = append(unhealthy, p)
			}
		}
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPICS\tPARTITIONS\tOFFLINE\tUNDER-REPLICATED\tUNDER-MIN-ISR")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\n", len(md.Topics), total, offline, under, underMin)
	tw.Flush()
	var internal []string
	for _, t := range md.Topics.Sorted() {
		if t.IsInternal {
			internal = append(internal, fmt.Sprintf("%s (%d partitions)", t.Topic, len(t.Partitions)))
		}
	}
	if len(internal) == 0 {
		fmt.Fprintln(out, "Counts include no internal topics.")
	} else {
		fmt.Fprintf(out, "Counts include internal topics: %s.\n", strings.Join(internal, ", "))
	}
	if len(unhealthy) == 0 {
		return
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLEADER\tREPLICAS\tISR\tSTATUS")
	for _, p := range unhealthy {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, leaderCell(p.Leader),
			int32List(p.Replicas), int32List(p.ISR), assessPartition(p, minISR[p.Topic]))
	}
	tw.Flush()
}

// partitionHealth is what an operator is paged for, computed from the
// Metadata answer and the topic's min.insync.replicas.
type partitionHealth struct {
	offline         bool  // no leader: nobody can produce or consume
	underReplicated bool  // fewer in-sync replicas than replicas
	underMinISR     bool  // fewer in-sync replicas than min.insync.replicas: acks=all produces fail
	err             error // the partition's own error code in the Metadata answer
}

// assessPartition judges one partition; minISR <= 0 means the topic's
// min.insync.replicas is unknown and under-min-ISR is not judged.
func assessPartition(p kadm.PartitionDetail, minISR int) partitionHealth {
	return partitionHealth{
		offline:         p.Leader < 0,
		underReplicated: len(p.ISR) < len(p.Replicas),
		underMinISR:     minISR > 0 && len(p.ISR) < minISR,
		err:             p.Err,
	}
}

func (h partitionHealth) healthy() bool {
	return !h.offline && !h.underReplicated && !h.underMinISR && h.err == nil
}

// String is the STATUS cell: "ok", or every problem, comma-separated.
func (h partitionHealth) String() string {
	var problems []string
	if h.offline {
		problems = append(problems, "offline")
	}
	if h.underReplicated {
		problems = append(problems, "under-replicated")
	}
	if h.underMinISR {
		problems = append(problems, "under-min-isr")
	}
	if h.err != nil {
		problems = append(problems, errorName(h.err))
	}
	if len(problems) == 0 {
		return "ok"
	}
	return strings.Join(problems, ",")
}

// leaderCell shows a partition's leader, or "none" when it has none.
func leaderCell(leader int32) string {
	if leader < 0 {
		return "none"
	}
	return strconv.Itoa(int(leader))
}

// int32List renders broker ids as kafka-topics does, "1,2,3", in the
// order the broker gave: the first replica is the preferred leader.
func int32List(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}
