package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Group states as Kafka names them in DescribeGroups and ListGroups.
const (
	groupStateEmpty               = "Empty"
	groupStateStable              = "Stable"
	groupStateDead                = "Dead"
	groupStatePreparingRebalance  = "PreparingRebalance"
	groupStateCompletingRebalance = "CompletingRebalance"
)

// errGroupNotFound is the answer for a group the cluster does not know.
var errGroupNotFound = errors.New("the consumer group does not exist")

// groupOffsetRow is one line of the offsets table of skein group
// describe, with the cells kafka-consumer-groups --describe prints.
type groupOffsetRow struct {
	topic, partition, current, logEnd, lag string
	consumerID, host, clientID             string
}

// printGroupDescription prints one described group the way
// kafka-consumer-groups does with --describe --state and --describe:
// the group's coordinator, assignment strategy, state and member count,
// then one line per partition with its committed offset, log end offset,
// lag and owning member (members that own nothing get a line of their own).
func printGroupDescription(out io.Writer, l kadm.DescribedGroupLag) error {
	if errors.Is(l.DescribeErr, kerr.GroupIDNotFound) || (l.DescribeErr == nil && l.State == groupStateDead) {
		return errGroupNotFound
	}
	if l.DescribeErr != nil {
		return explainError(l.DescribeErr)
	}
	if l.FetchErr != nil {
		return fmt.Errorf("fetch committed offsets: %w", explainError(l.FetchErr))
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tCOORDINATOR (ID)\tASSIGNMENT-STRATEGY\tSTATE\t#MEMBERS")
	fmt.Fprintf(tw, "%s\t%s:%d (%d)\t%s\t%s\t%d\n", l.Group, l.Coordinator.Host, l.Coordinator.Port, l.Coordinator.NodeID,
		orDash(l.Protocol), orDash(l.State), len(l.Members))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	switch l.State {
	case groupStateEmpty:
		fmt.Fprintf(out, "Consumer group '%s' has no active members.\n\n", l.Group)
	case groupStatePreparingRebalance, groupStateCompletingRebalance:
		fmt.Fprintf(out, "Warning: consumer group '%s' is rebalancing; assignments are not settled.\n\n", l.Group)
	}
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
	for _, r := range groupOffsetRows(l) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Group, r.topic, r.partition, r.current, r.logEnd, r.lag,
			r.consumerID, r.host, r.clientID)
	}
	return tw.Flush()
}

// groupOffsetRows turns a group's lag into table rows sorted by topic and
// partition, then one row for each member that owns no partition, as
// Kafka shows them. A partition without a committed offset shows "-" as
// its current offset and lag, as Kafka does, rather than a lag guessed
// from the log start.
func groupOffsetRows(l kadm.DescribedGroupLag) []groupOffsetRow {
	var rows []groupOffsetRow
	owning := map[string]bool{}
	for _, ml := range l.Lag.Sorted() {
		r := groupOffsetRow{
			topic: ml.Topic, partition: strconv.Itoa(int(ml.Partition)),
			current: "-", logEnd: "-", lag: "-", consumerID: "-", host: "-", clientID: "-",
		}
		if ml.Commit.At >= 0 {
			r.current = strconv.FormatInt(ml.Commit.At, 10)
		}
		switch {
		case ml.End.Err != nil:
			r.logEnd = errorName(ml.End.Err)
		default:
			r.logEnd = strconv.FormatInt(ml.End.Offset, 10)
		}
		if ml.Err == nil && ml.Commit.At >= 0 {
			r.lag = strconv.FormatInt(ml.Lag, 10)
		}
		if m := ml.Member; m != nil {
			r.consumerID, r.host, r.clientID = orDash(m.MemberID), orDash(m.ClientHost), orDash(m.ClientID)
			owning[m.MemberID] = true
		}
		rows = append(rows, r)
	}
	idle := make([]kadm.DescribedGroupMember, 0, len(l.Members))
	for _, m := range l.Members {
		if !owning[m.MemberID] {
			idle = append(idle, m)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].MemberID < idle[j].MemberID })
	for _, m := range idle {
		rows = append(rows, groupOffsetRow{
			topic: "-", partition: "-", current: "-", logEnd: "-", lag: "-",
			consumerID: orDash(m.MemberID), host: orDash(m.ClientHost), clientID: orDash(m.ClientID),
		})
	}
	return rows
}
