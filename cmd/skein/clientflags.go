package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// bootstrapFlag registers --bootstrap-server and its short form -b, as
// Kafka's tools name it.
func bootstrapFlag(fs *flag.FlagSet) *string {
	v := new(string)
	*v = "127.0.0.1:9092"
	fs.StringVar(v, "bootstrap-server", *v, "comma-separated host:port list of brokers")
	fs.StringVar(v, "b", *v, "short for --bootstrap-server")
	return v
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseAcks(s string) ([]kgo.Opt, error) {
	switch s {
	case "all", "-1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, nil
	case "1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}, nil
	case "0":
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}, nil
	}
	return nil, fmt.Errorf("--acks %q: want 0, 1 or all", s)
}

func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch s {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", s)
}
