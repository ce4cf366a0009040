package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDeleteTopicDisabled: delete.topic.enable=false was accepted and did
// nothing; Kafka then answers DeleteTopics with TOPIC_DELETION_DISABLED,
// and the topic and its records stay.
func TestDeleteTopicDisabled(t *testing.T) {
	tb := startBroker(t, withProp("delete.topic.enable", "false"))
	tb.createTopic("undeletable", 1, nil)
	requireServing(t, tb, "undeletable", 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(tb.client()).DeleteTopics(ctx, "undeletable")
	if err != nil {
		t.Fatal(err)
	}
	if got := resp["undeletable"].Err; !errors.Is(got, kerr.TopicDeletionDisabled) {
		t.Fatalf("delete with delete.topic.enable=false: %v, want TOPIC_DELETION_DISABLED", got)
	}
	consumeCount(t, tb, "undeletable", 10)
}
