package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

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

// setThrottles sets the throttled-replicas lists of the plan's copying
// partitions (IncrementalAlterConfigs SET, per topic, as
// kafka-reassign-partitions --throttle) and checks the brokers' rates.
// Kafka's tool also sets the rates on each broker; in Skein they are
// static properties, so a broker whose rate differs from rate is named
// and the lists still apply at that broker's configured rate.
func setThrottles(ctx context.Context, adm *kadm.Client, out io.Writer, current, target []reassignplan.Assignment, rate int64) error {
	byTopic, brokers := reassignplan.Throttles(current, target)
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
		if err == nil {
			for _, r := range res {
				if r.Err != nil {
					err = withBrokerMessage(r.Err, r.ErrMessage)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("throttle %s: %w", topic, explainError(err))
		}
	}
	if len(brokers) == 0 {
		return nil
	}
	configs, err := adm.DescribeBrokerConfigs(ctx, brokers...)
	if err != nil {
		return fmt.Errorf("describe broker configs: %w", explainError(err))
	}
	want := strconv.FormatInt(rate, 10)
	for _, rc := range configs {
		if rc.Err != nil {
			fmt.Fprintf(out, "Warning: broker %s: cannot read its throttle rates: %v\n", rc.Name, withBrokerMessage(rc.Err, rc.ErrMessage))
			continue
		}
		for _, c := range rc.Configs {
			if c.Key != leaderThrottledRate && c.Key != followerThrottledRate {
				continue
			}
			if got := c.MaybeValue(); got != want {
				fmt.Fprintf(out, "Warning: broker %s has %s=%s, not %s: the rate is a static broker property in Skein; set it in server.properties and restart the broker.\n", rc.Name, c.Key, got, want)
			}
		}
	}
	fmt.Fprintf(out, "The inter-broker throttle limit is %d B/s on the moving replicas.\nWarning: run --verify until the reassignment completes, so that the throttle is removed.\n", rate)
	return nil
}

// clearThrottleLists deletes the throttled-replicas lists of topics once
// their reassignments completed, as kafka-reassign-partitions --verify.
func clearThrottleLists(ctx context.Context, adm *kadm.Client, out io.Writer, topics []string) error {
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: leaderThrottledReplicas},
		{Op: kadm.DeleteConfig, Name: followerThrottledReplicas},
	}, topics...)
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = fmt.Errorf("%s: %w", r.Name, withBrokerMessage(r.Err, r.ErrMessage))
			}
		}
	}
	if err != nil {
		return fmt.Errorf("remove throttle: %w", explainError(err))
	}
	fmt.Fprintln(out, "Throttle was removed.")
	return nil
}
