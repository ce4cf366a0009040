package e2e

import (
	"bytes"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKcatConsumeToEnd runs `kcat -C -e`, which exits when librdkafka
// reports the end of the partition. librdkafka reports it from a Fetch
// answer that has no records and whose fetch offset equals the high
// watermark; it rejects a null record set (size -1) in that answer as a
// protocol error ("invalid MessageSetSize -1"), so the broker must send an
// empty one, as Kafka does.
func TestKcatConsumeToEnd(t *testing.T) {
	kcat := requireCommand(t, "kcat")
	tb := startBroker(t)
	const topic, n = "kcat-eof", 100
	tb.createTopic(topic, 1, nil)
	ctx := testContext(t, 15*time.Second)
	cl := tb.client(kgo.DefaultProduceTopic(topic))
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	cmd := exec.CommandContext(ctx, kcat, "-C", "-b", tb.addr, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", "%s\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat -C -e did not exit at the end of the partition: %v (context: %v)\nstderr:\n%s",
			err, ctx.Err(), stderr.String())
	}
	if lines := bytes.Count(stdout.Bytes(), []byte("\n")); lines != n {
		t.Fatalf("kcat read %d records, want %d\nstderr:\n%s", lines, n, stderr.String())
	}
}
