package main

// skein configs --entity-type broker-loggers: a broker's log levels, as
// kafka-configs --entity-type broker-loggers shows and changes them
// (BROKER_LOGGER resources, docs/configuration.md "Broker loggers").
// franz-go sends each broker's resource to that broker, which alone
// answers it.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerLoggers is the entity type of broker loggers.
const brokerLoggers = "broker-loggers"

// describeBrokerLoggers prints the loggers of the broker named, or of
// every broker, and their levels.
func describeBrokerLoggers(ctx context.Context, adm *kadm.Client, bootstrap *clusterFlags, e configEntity, out io.Writer) error {
	names := []string{e.name}
	if !e.named {
		ids, err := brokerIDs(ctx, adm)
		if err != nil {
			return fmt.Errorf("describe broker loggers: %w", explainError(err))
		}
		slices.Sort(ids)
		names = names[:0]
		for _, id := range ids {
			names = append(names, strconv.Itoa(int(id)))
		}
	}
	cl, err := newClient(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, n := range names {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, n
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe broker loggers: %w", explainError(err))
	}
	slices.SortFunc(resp.Resources, func(a, b kmsg.DescribeConfigsResponseResource) int {
		return compareNumeric(a.ResourceName, b.ResourceName)
	})
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return fmt.Errorf("describe broker-logger %s: %w", res.ResourceName, withBrokerMessage(err, valueOrNull(res.ErrorMessage)))
		}
		fmt.Fprintf(out, "Dynamic configs for broker-logger %s are:\n", res.ResourceName)
		for _, c := range res.Configs {
			fmt.Fprintf(out, "  %s=%s sensitive=%t synonyms={}\n", c.Name, valueOrNull(c.Value), c.IsSensitive)
		}
	}
	return nil
}

// alterBrokerLoggers sets (or, DELETE, resets to the root's) the levels of
// loggers of the broker named.
func alterBrokerLoggers(ctx context.Context, bootstrap *clusterFlags, e configEntity, alters []kadm.AlterConfig, validateOnly bool) error {
	cl, err := newClient(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, e.name
	for _, a := range alters {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = a.Name, a.Value
		c.Op = kmsg.IncrementalAlterConfigOpSet
		if a.Op == kadm.DeleteConfig {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return withBrokerMessage(err, valueOrNull(res.ErrorMessage))
		}
	}
	return nil
}
