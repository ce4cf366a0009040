package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skein-log/skein/internal/devca"
	"github.com/skein-log/skein/internal/devcluster"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	commands["dev"] = command{summary: "run a local cluster on 127.0.0.1 (3 brokers by default), optionally with a failover demo", run: clientCommand(runDev)}
}

// devReadyTimeout bounds how long the brokers may take to register.
const devReadyTimeout = 60 * time.Second

func runDev(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein dev", s)
	dataDir := fs.String("data", "", "data directory, created if missing and kept (default: a fresh temporary directory, removed on exit)")
	brokers := fs.Int("brokers", 3, "number of brokers (each also a controller unless --controllers is set)")
	controllers := fs.Int("controllers", 0, "number of dedicated controller-only nodes (node ids after the brokers'); 0: every broker is also a controller")
	base := fs.Int("port", 9092, "client port of broker 1; broker N listens on port+100*(N-1), its controller on that +1, its admin HTTP listener (/metrics, /readyz) on that +2")
	demo := fs.Bool("demo", false, "run the replication and failover demo, then stop")
	failovers := fs.Int("failover-runs", 0, "measure failover: kill the leader this many times and report the time to the first acks=all write acknowledged by the new leader")
	failoverClient := fs.String("failover-client", "franz-go", "the client --failover-runs measures, with its default settings: "+strings.Join(failoverClientNames(), " or ")+
		" (librdkafka, through confluent-kafka-go, needs a build with cgo and -tags rdkafka)")
	failoverLog := fs.String("failover-client-log", "", "write the measured client's debug log to this file")
	verbose := fs.Bool("v", false, "show broker logs on stderr (they always go to <data>/broker-N.log)")
	secure := fs.Bool("secure", false, "TLS and SCRAM-SHA-512 on the client ports, mutual TLS between the nodes (on port+3 and the controller ports), "+
		"ACLs enforced; a throwaway CA in <data>/tls; prints the client properties of the users admin and alice")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	newClient, ok := failoverClients[*failoverClient]
	if !ok {
		return fmt.Errorf("--failover-client %q: want %s (librdkafka needs a build with cgo and -tags rdkafka)", *failoverClient, strings.Join(failoverClientNames(), " or "))
	}
	if *secure && *failoverClient != "franz-go" {
		return errors.New("--failover-client: only franz-go with --secure")
	}
	if *brokers < 1 || *brokers > 9 {
		return errors.New("--brokers must be between 1 and 9")
	}
	if *controllers < 0 || *brokers+*controllers > 9 {
		return errors.New("--controllers must be at least 0, and brokers plus controllers at most 9")
	}
	if *base < 1024 || *base+100*(*brokers+*controllers-1)+3 > 65535 {
		return fmt.Errorf("--port %d: want 1024 to %d", *base, 65535-100*(*brokers+*controllers-1)-3)
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the skein binary for the brokers: %w", err)
	}
	dir := *dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "skein-dev-"); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		// Only what this run created goes: a --data directory is the
		// user's and is kept.
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--data %s: %w", dir, err)
	}
	cfg := devcluster.Config{Bin: bin, Dir: dir, Brokers: *brokers, Controllers: *controllers, Ports: devcluster.BasePorts(*base)}
	if *secure {
		ca, err := devca.Ensure(filepath.Join(dir, "tls"), time.Now())
		if err != nil {
			return err
		}
		if cfg.Secure, err = devcluster.PrepareSecure(dir, ca); err != nil {
			return err
		}
	}
	if *verbose {
		cfg.Output = func(int) io.Writer { return s.err }
	}
	c, err := devcluster.New(cfg)
	if err != nil {
		return err
	}
	defer c.Stop(devcluster.StopGrace)
	if err := c.StartAll(); err != nil {
		return fmt.Errorf("%w; choose another --port", err)
	}
	readyCtx, cancel := context.WithTimeout(ctx, devReadyTimeout)
	err = c.WaitReady(readyCtx)
	cancel()
	if err == nil && *secure {
		readyCtx, cancel := context.WithTimeout(ctx, devReadyTimeout)
		err = c.SetUpUsers(readyCtx)
		cancel()
	}
	if err != nil {
		return devInterrupted(ctx, err)
	}
	fmt.Fprintf(s.out, "skein dev: %d brokers on %s, data in %s\n", c.Brokers(), strings.Join(c.Addrs(), ","), dir)
	if *secure {
		printSecure(s.out, c, cfg.Secure, dir)
	}
	if admin := c.AdminAddrs(); len(admin) > 0 {
		urls := make([]string, len(admin))
		for i, a := range admin {
			urls[i] = "http://" + a
		}
		fmt.Fprintf(s.out, "skein dev: admin (/metrics, /readyz) on %s\n", strings.Join(urls, ","))
	}
	if *controllers > 0 {
		fmt.Fprintf(s.out, "skein dev: %d dedicated controllers, node ids %d-%d\n", *controllers, *brokers+1, *brokers+*controllers)
	}
	switch {
	case *failovers > 0:
		var clientLog io.Writer
		if *failoverLog != "" {
			f, err := os.Create(*failoverLog)
			if err != nil {
				return fmt.Errorf("--failover-client-log: %w", err)
			}
			defer f.Close()
			clientLog = f
		}
		return devInterrupted(ctx, c.MeasureFailover(ctx, *failovers, newClient(clientLog), s.out))
	case *demo:
		return devInterrupted(ctx, c.Demo(ctx, s.out))
	}
	fmt.Fprintln(s.out, "press Ctrl-C to stop")
	// A broker that stops by itself (a failed disk) ends the cluster
	// loudly rather than leaving a smaller one running unnoticed.
	exited := make(chan int, c.Nodes())
	for i := range c.Nodes() {
		ch := c.Exited(i)
		go func() {
			select {
			case <-ch:
				exited <- i
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(s.out, "skein dev: stopping")
		return nil
	case i := <-exited:
		return fmt.Errorf("%s stopped by itself (see %s); stopping the cluster", c.Name(i), c.LogPath(i))
	}
}

// failoverClients are the clients --failover-client names; each makes a
// producer with the library's default settings that writes its debug log
// to the writer, if not nil. dev_rdkafka.go adds librdkafka.
var failoverClients = map[string]func(debugLog io.Writer) devcluster.NewFailoverProducer{
	"franz-go": func(debugLog io.Writer) devcluster.NewFailoverProducer {
		if debugLog == nil {
			return devcluster.FranzFailoverProducer()
		}
		stamp := func() string { return time.Now().UTC().Format("15:04:05.000000 ") }
		return devcluster.FranzFailoverProducer(kgo.WithLogger(kgo.BasicLogger(debugLog, kgo.LogLevelDebug, stamp)))
	},
}

func failoverClientNames() []string { return slices.Sorted(maps.Keys(failoverClients)) }

// printSecure tells how to reach a --secure cluster.
func printSecure(out io.Writer, c *devcluster.Cluster, sec *devcluster.Secure, dir string) {
	fmt.Fprintf(out, "skein dev: SASL_SSL with SCRAM-SHA-512 on the client ports; nodes over mutual TLS on %s and the controller ports; CA %s\n",
		strings.Join(c.InternalAddrs(), ","), sec.CA.CA)
	for _, u := range []struct{ name, role string }{
		{devcluster.AdminUser, "super user"},
		{devcluster.AliceUser, "ACLs: ALL on every topic and group"},
	} {
		path := sec.PropertiesFile(dir, u.name)
		fmt.Fprintf(out, "\nskein dev: %s (%s): %s\n%s", u.name, u.role, path, sec.ClientProperties(u.name, sec.Users[u.name]))
	}
	fmt.Fprintf(out, "\ntry: skein topic list --bootstrap-server %s --command-config %s\n\n", c.Addrs()[0], sec.PropertiesFile(dir, devcluster.AdminUser))
}

// devInterrupted says "interrupted" for an error that Ctrl-C caused, so
// the person who pressed it is not shown a timeout.
func devInterrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return err
}
