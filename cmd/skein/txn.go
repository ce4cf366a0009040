package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	commands["txn"] = command{summary: "list, describe, abort and find hanging transactions (like kafka-transactions)", run: clientCommand(runTxn)}
}

const txnUsage = "usage: skein txn list|describe|abort|find-hanging [flags]"

func runTxn(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, txnUsage, map[string]clientRun{
		"list":         runTxnList,
		"describe":     runTxnDescribe,
		"abort":        runTxnAbort,
		"find-hanging": runTxnFindHanging,
	})
}

// runTxnList is kafka-transactions.sh list: every transactional id of
// every coordinator (ListTransactions to each broker).
func runTxnList(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein txn list", s)
	af := addAdminFlags(fs, "transactional-id", "unused by list")
	var states stringsFlag
	fs.Var(&states, "state", "list only transactions in this state (repeatable): Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort")
	var pidFlags stringsFlag
	fs.Var(&pidFlags, "producer-id", "list only this producer id's (repeatable)")
	names, err := af.names(fs, args)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("list takes no transactional ids (got %q); use skein txn describe <id>", names)
	}
	var pids []int64
	for _, f := range pidFlags {
		pid, err := strconv.ParseInt(f, 10, 64)
		if err != nil || pid < 0 {
			return fmt.Errorf("--producer-id %q: want a producer id", f)
		}
		pids = append(pids, pid)
	}
	adm, ctx, done, err := af.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	listed, err := adm.ListTransactions(ctx, pids, states)
	if err != nil {
		return fmt.Errorf("list transactions: %w", explainError(err))
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TransactionalId\tCoordinator\tProducerId\tTransactionState")
	for _, l := range listed.Sorted() {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", l.TxnID, l.Coordinator, l.ProducerID, l.State)
	}
	return tw.Flush()
}

// runTxnDescribe is kafka-transactions.sh describe.
func runTxnDescribe(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein txn describe", s)
	af := addAdminFlags(fs, "transactional-id", "transactional id (ids may also be given as arguments)")
	ids, err := af.names(fs, args)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return errors.New("name the transactional ids: skein txn describe --transactional-id <id>")
	}
	adm, ctx, done, err := af.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	described, err := adm.DescribeTransactions(ctx, ids...)
	if err != nil {
		return fmt.Errorf("describe transactions: %w", explainError(err))
	}
	return printTransactions(s.out, described, ids, time.Now())
}

func printTransactions(out io.Writer, described kadm.DescribedTransactions, ids []string, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions")
	var firstErr error
	for _, id := range ids {
		d, ok := described[id]
		switch {
		case !ok:
			d.Err = errors.New("no answer")
			fallthrough
		case d.Err != nil:
			fmt.Fprintf(tw, "-\t%s\t-\t-\t%s\t-\t-\t-\t-\n", id, errorName(d.Err))
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", id, explainError(d.Err))
			}
			continue
		}
		start, duration := "None", "None"
		if d.StartTimestamp >= 0 {
			start = fmt.Sprint(d.StartTimestamp)
			duration = fmt.Sprint(now.UnixMilli() - d.StartTimestamp)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", d.Coordinator, d.TxnID, d.ProducerID, d.ProducerEpoch,
			d.State, d.TimeoutMillis, start, duration, topicPartitions(d.Topics))
	}
	tw.Flush()
	return firstErr
}

// topicPartitions prints a set as Kafka's tool does: topic-partition,
// comma-separated, sorted.
func topicPartitions(ts kadm.TopicsSet) string {
	var out []string
	for _, tp := range ts.Sorted() {
		for _, p := range tp.Partitions {
			out = append(out, fmt.Sprintf("%s-%d", tp.Topic, p))
		}
	}
	if len(out) == 0 {
		return "None"
	}
	return strings.Join(out, ",")
}

// runTxnAbort is kafka-transactions.sh abort: an ABORT marker written
// straight to one partition's leader for a hanging transaction the
// coordinator no longer knows, named by its first offset there (the
// producer is then looked up with DescribeProducers) or by producer id,
// epoch and coordinator epoch.
func runTxnAbort(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein txn abort", s)
	af := addAdminFlags(fs, "topic", "topic of the partition")
	partition := fs.Int("partition", -1, "partition holding the hanging transaction")
	startOffset := fs.Int64("start-offset", -1, "first offset of the transaction in the partition (find-hanging shows it)")
	producerID := fs.Int64("producer-id", -1, "producer id (instead of --start-offset)")
	producerEpoch := fs.Int("producer-epoch", -1, "producer epoch (with --producer-id)")
	coordinatorEpoch := fs.Int("coordinator-epoch", -1, "coordinator epoch (with --producer-id)")
	names, err := af.names(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(names) != 1 || *partition < 0:
		return errors.New("name one partition: skein txn abort --topic <topic> --partition <n> --start-offset <offset>")
	case (*startOffset >= 0) == (*producerID >= 0):
		return errors.New("give either --start-offset or --producer-id with --producer-epoch and --coordinator-epoch")
	case *producerID >= 0 && (*producerEpoch < 0 || *coordinatorEpoch < 0):
		return errors.New("--producer-id needs --producer-epoch and --coordinator-epoch")
	}
	topic, part := names[0], int32(*partition)
	adm, ctx, done, err := af.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	m := kadm.TxnMarkers{ProducerID: *producerID, ProducerEpoch: int16(*producerEpoch), CoordinatorEpoch: int32(*coordinatorEpoch),
		Topics: kadm.TopicsSet{topic: {part: {}}}}
	if *startOffset >= 0 {
		described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {part: {}}})
		if err != nil {
			return fmt.Errorf("describe producers: %w", explainError(err))
		}
		found := false
		var perr error
		described.EachPartition(func(p kadm.DescribedProducersPartition) {
			if p.Topic != topic || p.Partition != part {
				return
			}
			if p.Err != nil {
				perr = fmt.Errorf("describe producers of %s-%d: %w", topic, part, explainError(p.Err))
			}
			for _, ap := range p.ActiveProducers.Sorted() {
				if ap.CurrentTxnStartOffset == *startOffset {
					m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, found = ap.ProducerID, ap.ProducerEpoch, ap.CoordinatorEpoch, true
				}
			}
		})
		if perr != nil {
			return perr
		}
		if !found {
			return fmt.Errorf("no open transaction starts at offset %d of %s-%d", *startOffset, topic, part)
		}
	}
	resp, err := adm.WriteTxnMarkers(ctx, m)
	if err != nil {
		return fmt.Errorf("write the abort marker: %w", explainError(err))
	}
	var perr error
	resp.EachPartition(func(r kadm.TxnMarkersPartitionResponse) {
		if r.Err != nil && perr == nil {
			perr = fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, explainError(r.Err))
		}
	})
	if perr != nil {
		return perr
	}
	fmt.Fprintf(s.out, "Aborted the transaction of producer %d (epoch %d) on %s-%d.\n", m.ProducerID, m.ProducerEpoch, topic, part)
	return nil
}

// runTxnFindHanging is kafka-transactions.sh find-hanging: open
// transactions on a broker's partitions (DescribeProducers) older than
// the maximum transaction timeout that their coordinator does not know
// as ongoing with that partition.
func runTxnFindHanging(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein txn find-hanging", s)
	af := addAdminFlags(fs, "topic", "look only at this topic (with --partition: that partition)")
	brokerID := fs.Int("broker-id", -1, "look at the partitions this broker leads")
	partition := fs.Int("partition", -1, "with --topic: only this partition")
	maxTimeout := fs.Int("max-transaction-timeout", 15, "transaction.max.timeout.ms of the cluster, in minutes: only older transactions can hang")
	names, err := af.names(fs, args)
	if err != nil {
		return err
	}
	if (*brokerID < 0) == (len(names) == 0) {
		return errors.New("give either --broker-id or --topic")
	}
	adm, ctx, done, err := af.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	md, err := adm.Metadata(ctx, names...)
	if err != nil {
		return fmt.Errorf("metadata: %w", explainError(err))
	}
	set := kadm.TopicsSet{}
	for _, t := range md.Topics.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			if (*brokerID >= 0 && p.Leader != int32(*brokerID)) || (*partition >= 0 && p.Partition != int32(*partition)) {
				continue
			}
			set.Add(t.Topic, p.Partition)
		}
	}
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return fmt.Errorf("describe producers: %w", explainError(err))
	}
	now := time.Now()
	candidates := openTransactions(described, now, time.Duration(*maxTimeout)*time.Minute)
	var pids []int64
	for _, c := range candidates {
		if !slices.Contains(pids, c.ProducerID) {
			pids = append(pids, c.ProducerID)
		}
	}
	var txns kadm.DescribedTransactions
	if len(pids) > 0 {
		listed, err := adm.ListTransactions(ctx, pids, nil)
		if err != nil {
			return fmt.Errorf("list transactions: %w", explainError(err))
		}
		if len(listed) > 0 {
			if txns, err = adm.DescribeTransactions(ctx, listed.TransactionalIDs()...); err != nil {
				return fmt.Errorf("describe transactions: %w", explainError(err))
			}
		}
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)")
	for _, h := range hanging(candidates, txns) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", h.Topic, h.Partition, h.ProducerID, h.ProducerEpoch,
			h.CoordinatorEpoch, h.CurrentTxnStartOffset, h.LastTimestamp, int(now.Sub(time.UnixMilli(h.LastTimestamp)).Minutes()))
	}
	return tw.Flush()
}

// openTransactions are the producers with a transaction open on their
// partition whose last write is older than maxTimeout: no coordinator
// would let a transaction live that long.
func openTransactions(described kadm.DescribedProducersTopics, now time.Time, maxTimeout time.Duration) []kadm.DescribedProducer {
	var out []kadm.DescribedProducer
	for _, p := range described.SortedPartitions() {
		if p.Err != nil {
			continue
		}
		for _, ap := range p.ActiveProducers.Sorted() {
			if ap.CurrentTxnStartOffset >= 0 && now.Sub(time.UnixMilli(ap.LastTimestamp)) > maxTimeout {
				out = append(out, ap)
			}
		}
	}
	return out
}

// hanging keeps the open transactions whose coordinator does not have
// them as ongoing: no transactional id with that producer id and epoch
// is Ongoing (or preparing) with the partition.
func hanging(candidates []kadm.DescribedProducer, txns kadm.DescribedTransactions) []kadm.DescribedProducer {
	var out []kadm.DescribedProducer
	for _, c := range candidates {
		live := false
		for _, t := range txns {
			if t.Err != nil || t.ProducerID != c.ProducerID || t.ProducerEpoch != c.ProducerEpoch {
				continue
			}
			if t.State == "Ongoing" || t.State == "PrepareCommit" || t.State == "PrepareAbort" {
				if t.Topics.Lookup(c.Topic, c.Partition) {
					live = true
				}
			}
		}
		if !live {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}
