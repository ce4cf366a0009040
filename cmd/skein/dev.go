package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/node"
)

func init() {
	commands["dev"] = command{summary: "run a local broker on 127.0.0.1 for development, optionally with a demo", run: runDev}
}

func runDev(args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	dataDir := fs.String("data", "", "data directory (default: a fresh temporary directory)")
	port := fs.Int("port", 9092, "client port")
	demo := fs.Bool("demo", false, "run the demo (create a topic, produce, restart the broker, read everything back) and exit")
	verbose := fs.Bool("v", false, "show broker logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dataDir == "" {
		d, err := os.MkdirTemp("", "skein-dev-")
		if err != nil {
			return err
		}
		*dataDir = d
	}
	level := "warn"
	if *verbose {
		level = "info"
	}
	cfg, err := config.Load("", nil, map[string]string{
		"node.id":   "1",
		"listeners": "PLAINTEXT://127.0.0.1:" + strconv.Itoa(*port) + ",CONTROLLER://127.0.0.1:" + strconv.Itoa(*port+1),
		"log.dirs":  filepath.Join(*dataDir, "broker-1"),
		"log.level": level,
	})
	if err != nil {
		return err
	}
	logger := newLogger(cfg.LogFormat, cfg.LogLevel)
	b := node.New(cfg, node.Options{Logger: logger})
	if err := b.Start(); err != nil {
		return err
	}
	addr := b.Addr("PLAINTEXT")
	fmt.Printf("skein dev: broker 1 listening on %s, data in %s\n", addr, *dataDir)
	if !*demo {
		fmt.Println("press Ctrl-C to stop")
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		<-sigs
		return b.Close()
	}
	return runSingleBrokerDemo(cfg, logger, b, addr)
}

// runSingleBrokerDemo shows the storage contract end to end: records
// acknowledged with acks=all survive a broker restart.
func runSingleBrokerDemo(cfg *config.Broker, logger *slog.Logger, b *node.Broker, addr string) error {
	const topic, records = "demo", 1000
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		cl.Close()
		return fmt.Errorf("create topic: %w", err)
	}
	fmt.Printf("created topic %q with 3 partitions\n", topic)
	start := time.Now()
	for i := 0; i < records; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i % 10)), Value: []byte("record-" + strconv.Itoa(i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		cl.Close()
		return err
	}
	cl.Close()
	fmt.Printf("produced %d records with acks=all (idempotent) in %v\n", records, time.Since(start).Round(time.Millisecond))

	fmt.Println("restarting the broker...")
	if err := b.Close(); err != nil {
		return err
	}
	b = node.New(cfg, node.Options{Logger: logger})
	if err := b.Start(); err != nil {
		return err
	}
	defer b.Close()

	cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	seen := map[string]bool{}
	for len(seen) < records {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read back %d of %d records: %w", len(seen), records, err)
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = errors.Join(ferr, err) })
		if ferr != nil {
			return ferr
		}
		fetches.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	fmt.Printf("read back all %d records after the restart\n", len(seen))
	return nil
}
