package api

// Broker loggers (BROKER_LOGGER resources, type 8), as Kafka's brokers
// serve them: the resource named by a broker's id lists that broker's
// loggers (the root and its components', internal/loglevel) with their
// levels in DescribeConfigs, and IncrementalAlterConfigs changes them at
// once on the broker that received it: SET gives a logger a level
// (TRACE, DEBUG, INFO, WARN, ERROR, FATAL), DELETE makes it follow the
// root's again. Nothing is persisted or forwarded: a restart starts from
// log.level. Both are checked as ALTER_CONFIGS / DESCRIBE_CONFIGS on the
// cluster, as Kafka checks them.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/loglevel"
)

// Kafka's ConfigResource type of broker loggers.
const resourceBrokerLogger = 8

// describeBrokerLoggers answers a DescribeConfigs resource of type 8.
func (s *Server) describeBrokerLoggers(name string) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if name == "" {
		return nil, &kafkaError{kerr.InvalidRequest, "Broker id must not be empty"}
	}
	if err := s.foreignBrokerError(name, false); err != nil {
		return nil, err
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, l := range s.Backend.Loggers().Loggers() {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = l.Name
		c.Value = kmsg.StringPtr(loglevel.LevelName(l.Level))
		c.Source = kmsg.ConfigSourceDynamicBrokerLoggerConfig
		out = append(out, c)
	}
	return out, nil
}

// alterBrokerLoggers applies an IncrementalAlterConfigs resource of type
// 8 on this broker: every operation is checked before any applies.
func (s *Server) alterBrokerLoggers(r *Request, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if err := s.configResourceDenied(r, authz.OpAlterConfigs, rr.ResourceType, rr.ResourceName); err != nil {
		return err
	}
	if err := s.foreignBrokerError(rr.ResourceName, false); err != nil {
		return err
	}
	levels := s.Backend.Loggers()
	seen := map[string]bool{}
	var apply []func() error
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return &kafkaError{kerr.InvalidRequest, "Error due to duplicate config keys"}
		}
		seen[c.Name] = true
		if (c.Op == opSet || c.Op == opDelete) && !levels.Has(c.Name) {
			return &kafkaError{kerr.InvalidConfig, fmt.Sprintf("Logger %s does not exist!", c.Name)}
		}
		switch c.Op {
		case opSet:
			if c.Value == nil {
				return &kafkaError{kerr.InvalidRequest, "Null value not supported for : " + c.Name}
			}
			level, err := loglevel.ParseLevel(*c.Value)
			if err != nil {
				return &kafkaError{kerr.InvalidConfig, fmt.Sprintf("Cannot set the log level of %s: %v", c.Name, err)}
			}
			apply = append(apply, func() error { return levels.Set(c.Name, level) })
		case opDelete:
			if c.Name == loglevel.Root {
				return &kafkaError{kerr.InvalidRequest, "Removing the log level of the root logger is not allowed"}
			}
			apply = append(apply, func() error { return levels.Reset(c.Name) })
		case opAppend, opSubtract:
			op := map[kmsg.IncrementalAlterConfigOp]string{opAppend: "APPEND", opSubtract: "SUBTRACT"}[c.Op]
			return &kafkaError{kerr.InvalidRequest, op + " operation is not allowed for the BROKER_LOGGER resource"}
		default:
			return &kafkaError{kerr.InvalidRequest, fmt.Sprintf("Unknown operation type %d is not allowed for the BROKER_LOGGER resource", c.Op)}
		}
	}
	if validateOnly {
		return nil
	}
	var errs []error
	for _, f := range apply {
		errs = append(errs, f())
	}
	if err := errors.Join(errs...); err != nil {
		return err // checked above; the set of loggers is fixed
	}
	var changed []string
	for _, c := range rr.Configs {
		changed = append(changed, c.Name+"="+loglevel.LevelName(levels.Level(c.Name)))
	}
	s.Log.Info("broker logger levels changed", "loggers", strings.Join(changed, ","), "principal", r.Principal.String())
	return nil
}
