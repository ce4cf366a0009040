package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// runTopicProducers is `skein topic producers`: the idempotent producers
// each partition's leader holds state for (DescribeProducers, as
// kafka-transactions.sh describe-producers).
func runTopicProducers(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein topic producers", s)
	tf := addTopicFlags(fs)
	names, err := tf.names(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("name the topics: skein topic producers <topic> [<topic> ...]")
	}
	adm, ctx, done, err := tf.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	set := kadm.TopicsSet{}
	for _, n := range names {
		set[n] = nil // every partition
	}
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return fmt.Errorf("describe producers: %w", explainError(err))
	}
	return printProducers(s.out, described)
}

func printProducers(out io.Writer, described kadm.DescribedProducersTopics) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLEADER\tPRODUCER-ID\tEPOCH\tLAST-SEQUENCE\tLAST-TIMESTAMP")
	var firstErr error
	for _, p := range described.SortedPartitions() {
		if p.Err != nil {
			fmt.Fprintf(tw, "%s\t%d\t%d\t-\t-\t-\t%s\n", p.Topic, p.Partition, p.Leader, errorName(p.Err))
			if firstErr == nil {
				firstErr = fmt.Errorf("%s/%d: %w", p.Topic, p.Partition, explainError(p.Err))
			}
			continue
		}
		for _, ap := range p.ActiveProducers.Sorted() {
			ts := "-"
			if ap.LastTimestamp >= 0 {
				ts = time.UnixMilli(ap.LastTimestamp).UTC().Format(time.RFC3339Nano)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Topic, p.Partition, p.Leader, ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ts)
		}
	}
	tw.Flush()
	return firstErr
}
