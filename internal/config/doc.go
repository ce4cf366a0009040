// Package config defines every broker and topic property Skein reads, with
// Kafka's names, defaults and validation, and loads them from a Java
// .properties file, SKEIN_* environment variables and command-line overrides
// (in that order of precedence, later wins).
//
// One registry (registry_*.go) is the single source of truth: the loader
// validates against it, DescribeConfigs lists from it, and docs/configuration.md
// is generated from it so the documentation cannot drift from the code.
package config

//go:generate go run ./gen
