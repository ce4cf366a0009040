package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/skein-log/skein/internal/balancer"
)

// runClusterLogDirs is `skein cluster log-dirs`: every broker's log
// directories (DescribeLogDirs, as kafka-log-dirs.sh --describe), with the
// volume's size and free space, and each partition replica's size.
func runClusterLogDirs(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein cluster log-dirs", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	topic := fs.String("topic", "", "list only this topic's partitions")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	adm, err := newAdmin(bootstrap)
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var set kadm.TopicsSet
	if *topic != "" {
		md, err := adm.Metadata(ctx, *topic)
		if err != nil {
			return fmt.Errorf("metadata from %s: %w", bootstrap, explainError(err))
		}
		t, ok := md.Topics[*topic]
		if !ok || t.Err != nil {
			return fmt.Errorf("topic %s: %w", *topic, explainError(t.Err))
		}
		set = kadm.TopicsSet{}
		for p := range t.Partitions {
			set.Add(*topic, p)
		}
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return fmt.Errorf("log dirs from %s: %w", bootstrap, explainError(err))
	}
	printLogDirs(s.out, dirs)
	return nil
}

func printLogDirs(out io.Writer, dirs kadm.DescribedAllLogDirs) {
	sorted := dirs.Sorted()
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tDIR\tPARTITIONS\tSIZE\tVOLUME-TOTAL\tVOLUME-USABLE\tSTATUS")
	for _, d := range sorted {
		n := 0
		for _, ps := range d.Topics {
			n += len(ps)
		}
		status := "ok"
		if d.Err != nil {
			status = errorName(d.Err)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\n", d.Broker, d.Dir, n, byteCount(d.Size()),
			byteCount(d.TotalBytes), byteCount(d.UsableBytes), status)
	}
	tw.Flush()

	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tBROKER\tDIR\tSIZE\tOFFSET-LAG\tFUTURE")
	for _, d := range sorted {
		for _, p := range d.Topics.Sorted() {
			// FUTURE: the copy of a move to this directory under way
			// (AlterReplicaLogDirs); its lag is how far it is behind.
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%v\n", p.Topic, p.Partition, p.Broker, p.Dir, byteCount(p.Size), p.OffsetLag, p.IsFuture)
		}
	}
	tw.Flush()
}

// byteCount shows a size in bytes as people read it: 1536 -> "1.5 KiB";
// negative (unknown) -> "-".
func byteCount(n int64) string {
	if n < 0 {
		return "-"
	}
	return balancer.FormatBytes(n)
}
