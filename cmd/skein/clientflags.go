package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

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

// adminTimeout is how long an admin command waits for the cluster by
// default before giving up.
const adminTimeout = 30 * time.Second

// streams are the standard streams a client command reads and writes;
// tests pass buffers instead.
type streams struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

func stdStreams() streams { return streams{in: os.Stdin, out: os.Stdout, err: os.Stderr} }

// clientCommand adapts a client command to the command table: it cancels
// the context on Ctrl-C or SIGTERM (so consume and produce can print their
// summary) and treats -h as success rather than an error.
func clientCommand(run func(ctx context.Context, args []string, s streams) error) func([]string) error {
	return func(args []string) error {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err := run(ctx, args, stdStreams())
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
}

// clientRun is a client command or subcommand.
type clientRun func(ctx context.Context, args []string, s streams) error

// runSubcommand runs the subcommand named by args[0] ("skein topic
// create ..."), or fails with the usage line; -h, --help and help print
// the usage and succeed.
func runSubcommand(ctx context.Context, args []string, s streams, usage string, subs map[string]clientRun) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	if isHelp(args[0]) {
		name := strings.Fields(strings.TrimPrefix(usage, "usage: "))
		fmt.Fprintf(s.out, "%s\n\nRun '%s %s <subcommand> -h' for the flags of a subcommand.\n", usage, name[0], name[1])
		return nil
	}
	sub := subs[args[0]]
	if sub == nil {
		return fmt.Errorf("unknown subcommand %q; %s", args[0], usage)
	}
	return sub(ctx, args[1:], s)
}

// isHelp tells an argument that asks for usage.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// newFlagSet returns a flag set that reports parse errors and usage on
// the command's error stream.
func newFlagSet(name string, s streams) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(s.err)
	return fs
}

// parseInterspersed parses flags that may come before or after positional
// arguments ("skein topic create orders --partitions 3"); the standard
// flag package stops at the first positional argument. Everything after
// "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// keyValue is one key=value flag value.
type keyValue struct{ key, value string }

// keyValuesFlag collects a repeatable key=value flag in the order given,
// keeping repeated keys: record headers may repeat a key, and callers
// that need unique keys check for themselves.
type keyValuesFlag []keyValue

func (f *keyValuesFlag) String() string {
	parts := make([]string, 0, len(*f))
	for _, kv := range *f {
		parts = append(parts, kv.key+"="+kv.value)
	}
	return strings.Join(parts, ",")
}

func (f *keyValuesFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	*f = append(*f, keyValue{key: strings.TrimSpace(k), value: val})
	return nil
}

// stringsFlag collects a repeatable string flag.
type stringsFlag []string

func (f *stringsFlag) String() string { return strings.Join(*f, ",") }

func (f *stringsFlag) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("must not be empty")
	}
	*f = append(*f, strings.TrimSpace(v))
	return nil
}

// adminFlags are the flags every admin subcommand of one kind of
// resource (topic, group) shares: the cluster, the resource's name flag
// and how long to wait.
type adminFlags struct {
	bootstrap *clusterFlags
	name      *string
	timeout   *time.Duration
}

// addAdminFlags registers --bootstrap-server, --timeout and a flag that
// names a resource (e.g. --topic).
func addAdminFlags(fs *flag.FlagSet, nameFlag, nameUsage string) adminFlags {
	return adminFlags{
		bootstrap: clusterFlag(fs),
		name:      fs.String(nameFlag, "", nameUsage),
		timeout:   fs.Duration("timeout", adminTimeout, "give up on the cluster after this long"),
	}
}

// names parses the flags and returns the resources named by the name
// flag and by positional arguments, without duplicates, in the order given.
func (f adminFlags) names(fs *flag.FlagSet, args []string) ([]string, error) {
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	var names []string
	seen := map[string]bool{}
	for _, n := range append([]string{*f.name}, positional...) {
		if n = strings.TrimSpace(n); n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names, nil
}

// connect returns an admin client and a context bounded by --timeout.
func (f adminFlags) connect(ctx context.Context) (*kadm.Client, context.Context, context.CancelFunc, error) {
	adm, err := newAdmin(f.bootstrap)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, *f.timeout)
	return adm, ctx, func() { cancel(); adm.Close() }, nil
}

// newAdmin returns an admin client for a comma-separated bootstrap list.
// Closing the admin client closes its connections.
func newAdmin(bootstrap *clusterFlags) (*kadm.Client, error) {
	cl, err := newClient(bootstrap)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// newClient is newAdmin's client, for requests kadm has no call for.
func newClient(bootstrap *clusterFlags) (*kgo.Client, error) {
	opts, err := bootstrap.opts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", bootstrap, err)
	}
	return cl, nil
}
