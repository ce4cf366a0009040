package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/skein-log/skein/internal/reassignplan"
)

// The throttle properties (KIP-73), by Kafka's names.
const (
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
	leaderThrottledRate       = "leader.replication.throttled.rate"
	followerThrottledRate     = "follower.replication.throttled.rate"
)

// setThrottles throttles the plan's copying as kafka-reassign-partitions
// --execute --throttle does: it sets the throttled-replicas lists of the
// copying partitions (IncrementalAlterConfigs SET, per topic) and both
// rates, leader.replication.throttled.rate and
// follower.replication.throttled.rate, as dynamic configs of every broker
// that sends or receives a copy (IncrementalAlterConfigs SET on each
// broker's resource), which apply at once.
func setThrottles(ctx context.Context, adm *kadm.Client, out io.Writer, current, target []reassignplan.Assignment, rate int64) error {
	byTopic, brokers := reassignplan.Throttles(current, target)
	if len(brokers) > 0 {
		value := strconv.FormatInt(rate, 10)
		res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: leaderThrottledRate, Value: &value},
			{Op: kadm.SetConfig, Name: followerThrottledRate, Value: &value},
		}, brokers...)
		if err = firstAlterError(res, err); err != nil {
			return fmt.Errorf("set the throttle rates of brokers %s: %w", int32List(brokers), explainError(err))
		}
	}
	topics := make([]string, 0, len(byTopic))
	for t := range byTopic {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, topic := range topics {
		th := byTopic[topic]
		res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: leaderThrottledReplicas, Value: &th.Leader},
			{Op: kadm.SetConfig, Name: followerThrottledReplicas, Value: &th.Follower},
		}, topic)
		if err = firstAlterError(res, err); err != nil {
			return fmt.Errorf("throttle %s: %w", topic, explainError(err))
		}
	}
	fmt.Fprintf(out, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.\nThe inter-broker throttle limit was set to %d B/s\n", rate)
	return nil
}

// firstAlterError is err, else the first resource's error with the
// broker's message.
func firstAlterError(res kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("%s: %w", r.Name, withBrokerMessage(r.Err, r.ErrMessage))
		}
	}
	return nil
}

// removeThrottles removes the throttle once the plan's reassignments
// completed, as kafka-reassign-partitions --verify: the rates from every
// broker of the cluster (a dynamic value set on a broker is deleted, so
// its static one applies again) and the throttled-replicas lists of the
// plan's topics.
func removeThrottles(ctx context.Context, adm *kadm.Client, out io.Writer, topics []string) error {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("remove throttle: list brokers: %w", explainError(err))
	}
	brokers := md.Brokers.NodeIDs()
	slices.Sort(brokers)
	fmt.Fprintf(out, "Clearing broker-level throttles on brokers %s\n", int32List(brokers))
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: leaderThrottledRate},
		{Op: kadm.DeleteConfig, Name: followerThrottledRate},
	}, brokers...)
	if err = firstAlterError(res, err); err != nil {
		return fmt.Errorf("remove throttle rates: %w", explainError(err))
	}
	fmt.Fprintf(out, "Clearing topic-level throttles on %s %s\n", plural(len(topics), "topic"), strings.Join(topics, ","))
	res, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: leaderThrottledReplicas},
		{Op: kadm.DeleteConfig, Name: followerThrottledReplicas},
	}, topics...)
	if err = firstAlterError(res, err); err != nil {
		return fmt.Errorf("remove throttle: %w", explainError(err))
	}
	fmt.Fprintln(out, "Throttle was removed.")
	return nil
}
