package node

import (
	"log/slog"

	"github.com/skein-log/skein/internal/loglevel"
)

// The node's named loggers, Kafka's broker loggers (BROKER_LOGGER
// resources): the components that log on their own, each a logger made
// With(loglevel.Key, name) whose level can be changed at runtime. Every
// other line is the root logger's ("root"), whose level starts at
// log.level.
const (
	loggerAPI              = "api"               // request handlers
	loggerConnection       = "connection"        // client connections: accept, authentication, TLS, idle close
	loggerLogCleaner       = "log-cleaner"       // compaction
	loggerMetadataObserver = "metadata-observer" // a broker's copy of the metadata log
	loggerPartition        = "partition"         // partition replicas and their logs: appends, segment rolls, recovery
	loggerQuorum           = "quorum"            // the metadata quorum (KRaft)
	loggerReplicaFetcher   = "replica-fetcher"   // followers' fetching from leaders
)

var loggerNames = []string{loggerAPI, loggerConnection, loggerLogCleaner, loggerMetadataObserver,
	loggerPartition, loggerQuorum, loggerReplicaFetcher}

// newLoggers puts the levels of the node's loggers in front of the
// handler of base (which receives every line they enable, whatever its
// own level) and makes the named loggers.
func newLoggers(base *slog.Logger, rootLevel string, nodeID int32) (*loglevel.Levels, *slog.Logger, map[string]*slog.Logger) {
	var root slog.Level
	if err := root.UnmarshalText([]byte(rootLevel)); err != nil {
		root = slog.LevelInfo // config validated log.level; "" in hand-made configs
	}
	levels := loglevel.New(root, loggerNames...)
	log := slog.New(levels.Handler(base.Handler())).With("node", nodeID)
	named := make(map[string]*slog.Logger, len(loggerNames))
	for _, n := range loggerNames {
		named[n] = log.With(loglevel.Key, n)
	}
	return levels, log, named
}

// logger is one of the node's named loggers.
func (b *Broker) logger(name string) *slog.Logger {
	if l, ok := b.named[name]; ok {
		return l
	}
	panic("node: no logger named " + name)
}
