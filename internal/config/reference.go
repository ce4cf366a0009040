package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// brokerLoggersSection documents the BROKER_LOGGER resources
// (internal/api/broker_loggers.go; the names are internal/node's
// loggerNames, which a node test checks against this text).
const brokerLoggersSection = "Kafka's broker loggers (the BROKER_LOGGER config resource, " +
	"`skein configs describe|alter --entity-type broker-loggers --entity-name N`, or " +
	"`kafka-configs.sh --entity-type broker-loggers`): each broker has the root logger, `root`, whose level " +
	"starts at `log.level`, and one logger per component that logs on its own, whose lines carry " +
	"`component=NAME`: `api` (request handlers), `connection` (client connections: accept, " +
	"authentication, TLS, idle close), `log-cleaner` (compaction), `metadata-observer` (a broker's " +
	"copy of the metadata log), `partition` (partition replicas and their logs: appends, segment rolls, " +
	"recovery), `quorum` (the metadata quorum) and `replica-fetcher` (followers fetching from leaders). " +
	"A component without a level of its own has the root's.\n\n" +
	"DescribeConfigs of the resource named by a broker's id lists its loggers and their levels " +
	"(source DYNAMIC_BROKER_LOGGER_CONFIG). IncrementalAlterConfigs SET gives a logger a level, " +
	"one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL (anything else is INVALID_CONFIG, as is an unknown " +
	"logger); DELETE makes it follow the root's again (DELETE of `root` and APPEND/SUBTRACT are " +
	"INVALID_REQUEST). The change applies at once, to the broker that received the request only (a " +
	"resource naming another broker is INVALID_REQUEST; admin clients send it to the broker named), " +
	"and is not persisted: a restarted broker starts from `log.level`, as Kafka's does. Both need " +
	"DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster when an authorizer is configured.\n"

// Reference renders docs/configuration.md from the registry, so the
// documentation cannot drift from what the loader accepts.
func Reference() string {
	var b strings.Builder
	b.WriteString(referenceIntro)

	b.WriteString("\n## Broker properties\n\n")
	b.WriteString(updateModeIntro)
	b.WriteString("| Property | Type | Default | Valid values | Update mode | Description |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, p := range Properties() {
		if p.Name == "" || p.Ignored {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n",
			p.Name, p.Kind, defaultCell(&p), cell(p.Allowed()), p.Update, cell(brokerDoc(&p)))
	}

	b.WriteString("\n## Broker loggers\n\n")
	b.WriteString(brokerLoggersSection)

	b.WriteString("\n## Topic properties\n\n")
	b.WriteString("Set per topic with CreateTopics, AlterConfigs or IncrementalAlterConfigs " +
		"(for example with `kafka-configs.sh` or kadm). A topic without an override " +
		"takes the broker property in the second column.\n\n")
	b.WriteString("| Topic property | Broker default from | Type | Default | Valid values | Description |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, name := range TopicPropertyNames() {
		p := theRegistry().byTopic[name]
		from := "`" + p.Name + "`"
		if p.Name == "" {
			from = "(none: set per topic only)"
		}
		for _, f := range p.Fallbacks {
			from += ", `" + f.Name + "`"
		}
		def, _, _ := resolveBroker(nil, p)
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n",
			p.TopicName, from, p.Kind, code(def), cell(p.Allowed()), cell(p.Doc))
	}

	b.WriteString("\n## Accepted for compatibility\n\n")
	b.WriteString("These appear in Kafka's stock `server.properties`. Skein checks their values " +
		"and otherwise ignores them, so an existing file loads unchanged.\n\n")
	b.WriteString("| Property | Type | Default | Kafka meaning |\n|---|---|---|---|\n")
	for _, p := range Properties() {
		if p.Ignored {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", p.Name, p.Kind, code(p.Default), cell(p.Doc))
		}
	}

	b.WriteString("\n## Kafka properties Skein refuses\n\n| Property | Instead |\n|---|---|\n")
	for _, name := range slices.Sorted(maps.Keys(replacedKafkaProperties)) {
		fmt.Fprintf(&b, "| `%s` | %s |\n", name, cell(replacedKafkaProperties[name]))
	}
	return b.String()
}

const referenceIntro = `# Configuration reference

<!-- Generated from internal/config by "go generate ./internal/config"; do not edit by hand. -->

Skein uses Kafka's property names, defaults and meanings, so an existing
` + "`server.properties`" + ` mostly works as it is. Each property can be set in three
places; a later one wins, key by key:

1. the properties file given to ` + "`skein server`" + ` (samples in ` + "`config/`" + `): Java
   ` + "`.properties`" + ` syntax, ` + "`key=value`" + ` or ` + "`key: value`" + `, ` + "`#`" + ` and ` + "`!`" + ` comments, a trailing
   backslash continues a line;
2. environment variables: ` + "`SKEIN_`" + ` followed by the name in upper case with dots
   turned into underscores (` + "`SKEIN_LOG_DIRS=/data`" + ` sets ` + "`log.dirs`" + `);
3. command-line overrides, ` + "`key=value`" + ` pairs given as flags.

An unknown property or an invalid value stops the server with a message naming
the property, the value, what is allowed and where it was set. Some rules span
several properties: ` + "`controller.listener.names`" + ` must name a listener of a
controller, a controller's ` + "`node.id`" + ` must be one of ` + "`controller.quorum.voters`" + `
(and a broker-only node's must not), a controller-only node may have only
controller listeners and a broker-only node none, ` + "`broker.heartbeat.interval.ms`" + ` must be less
than ` + "`broker.session.timeout.ms`" + `, ` + "`replica.fetch.wait.max.ms`" + ` at most
` + "`replica.lag.time.max.ms`" + `, and ` + "`group.min.session.timeout.ms`" + ` at most
` + "`group.max.session.timeout.ms`" + `.

Retention follows Kafka's precedence: ` + "`log.retention.ms`" + ` if set, else
` + "`log.retention.minutes`" + `, else ` + "`log.retention.hours`" + `; segment roll time likewise
uses ` + "`log.roll.ms`" + `, else ` + "`log.roll.hours`" + `.

A full disk does not stop the broker. While a log directory's filesystem has less
free space than ` + "`log.dir.min.free.bytes`" + ` (or ` + "`log.dir.min.free.percent`" + ` of its
size, whichever is larger; Redpanda calls its floor ` + "`storage_min_free_bytes`" + `),
produces to its partitions are refused with KAFKA_STORAGE_ERROR and a message naming
the floor, and followers stop copying into it (they leave the ISR and catch up once
space returns), while fetches, metadata, consumer groups and the metadata quorum keep
serving on the space the floor leaves. Kafka has no code for "disk low"; this one is
retriable in every client (franz-go, librdkafka and the Java client refresh metadata
and retry until their delivery timeout), so producers resume by themselves once space
is freed, which the broker notices at the next produce (below the floor it reads the
free space at every write; above it, at most once a second, sooner as its own writes use
up half the headroom left, and at every metrics scrape). POLICY_VIOLATION or a non-retriable code would make clients drop the
records instead. The gauges ` + "`skein_log_dir_free_bytes`" + ` and
` + "`skein_log_dir_below_min_free`" + ` report each directory (alert rules in
` + "`deploy/prometheus/`" + `). A write that still meets ENOSPC (floor 0, or a
filesystem filled by someone else) is undone and refused the same way, and the
directory stays online; an I/O error (EIO) or a failed fsync takes the directory
offline and stops the broker, as in Kafka. Two writes still stop a broker on a
completely full disk, which is what the floor's headroom is for: the metadata log
(in the first log directory; a node that cannot write it halts) and creating or
recovering a replica.
`

const updateModeIntro = "The update mode is Kafka's: *read-only* properties are read at start " +
	"(a change needs a restart); *per-broker* ones may be changed at runtime for one broker; " +
	"*cluster-wide* ones also as the cluster-wide default. A dynamic value is set with " +
	"IncrementalAlterConfigs or AlterConfigs on the BROKER resource (`skein configs --alter " +
	"--entity-type brokers --entity-name N` or `--entity-default`, or `kafka-configs.sh`), " +
	"kept in the metadata log, and wins over server.properties: per-broker dynamic, then " +
	"cluster-default dynamic, then static, then the default. DescribeConfigs names the " +
	"source (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, " +
	"DEFAULT_CONFIG) and the synonyms.\n\n"

func defaultCell(p *Property) string {
	if p.Default == "" && p.Kind.isNumeric() {
		return "unset"
	}
	return code(p.Default)
}

// brokerDoc adds the topic-level name to a broker property that has one.
func brokerDoc(p *Property) string {
	if p.TopicName == "" {
		return p.Doc
	}
	return p.Doc + " Per topic: `" + p.TopicName + "`."
}

func code(s string) string {
	if s == "" {
		return "(empty)"
	}
	return "`" + s + "`"
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
