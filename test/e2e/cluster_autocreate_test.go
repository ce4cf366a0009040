package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterAutoCreateOnNonController: a Metadata request that may
// auto-create a topic, sent to a broker that is not the active controller,
// has the creation forwarded to the controller (KIP-590) instead of
// answering NOT_CONTROLLER. Both librdkafka (kcat) and franz-go, each
// talking only to a non-controller broker, deliver to a new topic.
func TestClusterAutoCreateOnNonController(t *testing.T) {
	kcat := requireCommand(t, "kcat")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startCluster(t, 3, map[string]string{"auto.create.topics.enable": "true"})
	haltAllAtEnd(t, c)
	ctrl := awaitActiveController(ctx, t, c, func(int32) bool { return true })
	others := otherBrokers(3, ctrl)
	addrs := c.addrs()

	// kcat: librdkafka sends a Metadata request allowing auto-creation to
	// its only bootstrap broker and fails the delivery on NOT_CONTROLLER.
	kcatAddr := addrs[others[0]-1]
	cmd := exec.CommandContext(ctx, kcat, "-b", kcatAddr, "-t", "auto-kcat", "-P",
		"-X", "message.timeout.ms=20000")
	cmd.Stdin = strings.NewReader("hi\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat -P via broker %d: %v\n%s", others[0], err, out.String())
	}
	if strings.Contains(out.String(), "failed") || strings.Contains(out.String(), "rror") {
		t.Fatalf("kcat -P via broker %d reported errors:\n%s", others[0], out.String())
	}
	got, err := kcatConsume(ctx, kcat, kcatAddr, "auto-kcat", []int{1})
	if err != nil {
		t.Fatal(err)
	}
	if string(got[0][0].Value) != "hi" {
		t.Fatalf("read back %q, want %q", got[0][0].Value, "hi")
	}

	// franz-go, seeded with the other non-controller only.
	cl := newSeededClient(t, []string{addrs[others[1]-1]},
		kgo.AllowAutoTopicCreation(), kgo.RecordRetries(3))
	start := time.Now()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto-franz", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("franz-go produce via broker %d: %v", others[1], err)
	}
	// Before the fix franz-go retried NOT_CONTROLLER for ~27 s; a forwarded
	// creation answers within a few metadata round trips.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("franz-go auto-create via a non-controller took %v", d)
	}
}
