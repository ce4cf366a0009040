package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTopicProducers: `skein topic producers` lists the idempotent
// producer that wrote to a partition, with its last sequence.
func TestTopicProducers(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "audited", "--partitions", "2", "-b", addr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i := range 3 {
		// One at a time: three batches, sequences 0, 1, 2.
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "audited", Partition: 1, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil || pid < 0 {
		t.Fatalf("franz-go has no producer id: %v", err)
	}

	out := mustRun(t, runTopic, "", "producers", "audited", "-b", addr)
	// TOPIC PARTITION LEADER PRODUCER-ID EPOCH LAST-SEQUENCE LAST-TIMESTAMP
	row := tableRow(t, out, "audited", "1")
	if want := []string{"audited", "1", "1", strconv.FormatInt(pid, 10), strconv.Itoa(int(epoch)), "2"}; len(row) != 7 || strings.Join(row[:6], " ") != strings.Join(want, " ") {
		t.Errorf("producer row %q, want %q and a timestamp:\n%s", row, want, out)
	}
	if strings.Contains(out, "audited  0") || strings.Count(out, "audited") != 1 {
		t.Errorf("partition 0 has no producer but is listed:\n%s", out)
	}
}
