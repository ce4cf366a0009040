package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	commands["configs"] = command{summary: "describe and alter dynamic broker and topic configs and broker log levels (like kafka-configs --entity-type brokers|topics|broker-loggers)", run: clientCommand(runConfigs)}
}

const configsUsage = "usage: skein configs describe|alter --entity-type brokers|topics|broker-loggers [--entity-name NAME | --entity-default] [--add-config k=v,...] [--delete-config k,...] [--all]"

func runConfigs(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, configsUsage, map[string]clientRun{
		"describe": runConfigsDescribe,
		"alter":    runConfigsAlter,
	})
}

// configEntity is kafka-configs' --entity-type, --entity-name and
// --entity-default for the entity types of configs (client quotas and
// SCRAM users are skein quota and skein user).
type configEntity struct {
	typ     string // "brokers", "topics" or "broker-loggers"
	name    string
	named   bool
	deflt   bool
	typeSet bool
}

func (e *configEntity) register(fs *flag.FlagSet) {
	fs.Func("entity-type", "brokers, topics or broker-loggers", func(v string) error {
		switch v {
		case "brokers", "broker":
			e.typ = "brokers"
		case "topics", "topic":
			e.typ = "topics"
		case "broker-loggers", "broker-logger":
			e.typ = brokerLoggers
		default:
			return fmt.Errorf("entity type %q: want brokers, topics or broker-loggers (client quotas: skein quota; SCRAM users: skein user)", v)
		}
		e.typeSet = true
		return nil
	})
	fs.Func("entity-name", "the broker id or topic name", func(v string) error {
		e.name, e.named = v, true
		return nil
	})
	fs.BoolFunc("entity-default", "brokers: the cluster-wide default (kafka-configs' <default>)", func(string) error {
		e.deflt = true
		return nil
	})
}

// parse parses the flags, which take no positional arguments, and checks
// the entity they name.
func (e *configEntity) parse(fs *flag.FlagSet, args []string) error {
	if rest, err := parseInterspersed(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q; %s", rest, configsUsage)
	}
	return e.check()
}

func (e *configEntity) check() error {
	switch {
	case !e.typeSet:
		return errors.New("give --entity-type brokers or topics")
	case e.named && e.deflt:
		return errors.New("give --entity-name or --entity-default, not both")
	case e.deflt && e.typ != "brokers":
		return errors.New("--entity-default is for --entity-type brokers only")
	case e.named && (e.typ == "brokers" || e.typ == brokerLoggers):
		if _, err := strconv.ParseInt(e.name, 10, 32); err != nil {
			return fmt.Errorf("--entity-name %q: a broker is named by its id", e.name)
		}
	}
	return nil
}

// what names the entity as kafka-configs' messages do.
func (e *configEntity) what() string {
	switch {
	case e.typ == "topics":
		return "topic " + e.name
	case e.typ == brokerLoggers:
		return "broker-logger " + e.name
	case e.deflt:
		return "default config for brokers in the cluster"
	}
	return "broker " + e.name
}

func runConfigsDescribe(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein configs describe", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	all := fs.Bool("all", false, "every config with its value and source, not only the dynamic ones")
	var e configEntity
	e.register(fs)
	if err := e.parse(fs, args); err != nil {
		return err
	}
	adm, ctx, done, err := adminFlags{bootstrap: bootstrap, timeout: timeout}.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	if e.typ == brokerLoggers {
		return describeBrokerLoggers(ctx, adm, bootstrap, e, s.out)
	}
	var rcs kadm.ResourceConfigs
	switch {
	case e.typ == "topics" && e.named:
		rcs, err = adm.DescribeTopicConfigs(ctx, e.name)
	case e.typ == "topics":
		return errors.New("name the topic: --entity-name TOPIC")
	case e.deflt:
		rcs, err = adm.DescribeBrokerConfigs(ctx)
	case e.named:
		id, _ := strconv.ParseInt(e.name, 10, 32)
		rcs, err = adm.DescribeBrokerConfigs(ctx, int32(id))
	default:
		// As kafka-configs: no name describes every broker.
		var ids []int32
		if ids, err = brokerIDs(ctx, adm); err == nil {
			rcs, err = adm.DescribeBrokerConfigs(ctx, ids...)
		}
	}
	if err != nil {
		return fmt.Errorf("describe configs: %w", explainError(err))
	}
	slices.SortFunc(rcs, func(a, b kadm.ResourceConfig) int { return compareNumeric(a.Name, b.Name) })
	for _, rc := range rcs {
		if rc.Err != nil {
			return fmt.Errorf("describe configs of %s: %w", rc.Name, withBrokerMessage(rc.Err, rc.ErrMessage))
		}
		printResourceConfigs(s.out, e.typ, rc, *all)
	}
	return nil
}

func brokerIDs(ctx context.Context, adm *kadm.Client) ([]int32, error) {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return nil, err
	}
	return md.Brokers.NodeIDs(), nil
}

// compareNumeric orders broker ids numerically ("" first), names as text.
func compareNumeric(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x - y
	}
	return strings.Compare(a, b)
}

// printResourceConfigs prints one resource as kafka-configs --describe
// does: without --all only the configs set dynamically on it, each with
// its synonyms.
func printResourceConfigs(out io.Writer, typ string, rc kadm.ResourceConfig, all bool) {
	kind, dynamic := "broker "+rc.Name, kmsg.ConfigSourceDynamicBrokerConfig
	switch {
	case typ == "topics":
		kind, dynamic = "topic "+rc.Name, kmsg.ConfigSourceDynamicTopicConfig
	case rc.Name == "":
		kind, dynamic = "brokers in the cluster", kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	switch {
	case all:
		fmt.Fprintf(out, "All configs for %s are:\n", kind)
	case rc.Name == "":
		fmt.Fprintf(out, "Default configs for %s are:\n", kind)
	default:
		fmt.Fprintf(out, "Dynamic configs for %s are:\n", kind)
	}
	for _, c := range rc.Configs {
		if !all && c.Source != dynamic {
			continue
		}
		syn := make([]string, 0, len(c.Synonyms))
		for _, s := range c.Synonyms {
			syn = append(syn, fmt.Sprintf("%s:%s=%s", s.Source, s.Key, valueOrNull(s.Value)))
		}
		fmt.Fprintf(out, "  %s=%s sensitive=%t synonyms={%s}\n", c.Key, valueOrNull(c.Value), c.Sensitive, strings.Join(syn, ", "))
	}
}

func valueOrNull(v *string) string {
	if v == nil {
		return "null"
	}
	return *v
}

func runConfigsAlter(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein configs alter", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	var e configEntity
	e.register(fs)
	var alters []kadm.AlterConfig
	fs.Func("add-config", "configs to set, k=v[,k=v...]; a list value in square brackets (k=[a,b])", func(v string) error {
		kvs, err := splitAddConfig(v)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			k, val, _ := strings.Cut(kv, "=")
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: strings.TrimSpace(k), Value: &val})
		}
		return nil
	})
	fs.Func("delete-config", "configs to delete (back to the next source), k[,k...]", func(v string) error {
		for _, k := range strings.Split(v, ",") {
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: strings.TrimSpace(k)})
		}
		return nil
	})
	validateOnly := fs.Bool("validate-only", false, "check the change without making it")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if !e.named && !e.deflt {
		return errors.New("name what to alter: --entity-name NAME (or --entity-default for brokers)")
	}
	if len(alters) == 0 {
		return errors.New("nothing to change: give --add-config k=v or --delete-config k")
	}
	adm, ctx, done, err := adminFlags{bootstrap: bootstrap, timeout: timeout}.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	var res kadm.AlterConfigsResponses
	switch {
	case e.typ == brokerLoggers:
		err = alterBrokerLoggers(ctx, bootstrap, e, alters, *validateOnly)
	case e.typ == "topics" && *validateOnly:
		res, err = adm.ValidateAlterTopicConfigs(ctx, alters, e.name)
	case e.typ == "topics":
		res, err = adm.AlterTopicConfigs(ctx, alters, e.name)
	default:
		var brokers []int32
		if e.named {
			id, _ := strconv.ParseInt(e.name, 10, 32)
			brokers = []int32{int32(id)}
		}
		alter := adm.AlterBrokerConfigs
		if *validateOnly {
			alter = adm.ValidateAlterBrokerConfigs
		}
		res, err = alter(ctx, alters, brokers...)
	}
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = withBrokerMessage(r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("alter %s: %w", e.what(), explainError(err))
	}
	verb := "Completed updating"
	if *validateOnly {
		verb = "Validated"
	}
	if e.deflt {
		fmt.Fprintf(s.out, "%s %s.\n", verb, e.what())
	} else {
		fmt.Fprintf(s.out, "%s config for %s.\n", verb, e.what())
	}
	return nil
}

// splitAddConfig splits kafka-configs' --add-config: k=v pairs separated
// by commas, where a value in square brackets may hold commas.
func splitAddConfig(v string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	flush := func(end int) error {
		kv := strings.TrimSpace(v[start:end])
		k, val, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("want key=value, got %q", kv)
		}
		if strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]") {
			val = val[1 : len(val)-1]
		}
		out = append(out, strings.TrimSpace(k)+"="+val)
		return nil
	}
	for i, r := range v {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				if err := flush(i); err != nil {
					return nil, err
				}
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced [ ] in %q", v)
	}
	if err := flush(len(v)); err != nil {
		return nil, err
	}
	return out, nil
}
