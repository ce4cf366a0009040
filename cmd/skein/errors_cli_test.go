package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestKafkaErrorLine(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		message string
		want    string
	}{
		{"name and explanation", kerr.TopicAlreadyExists, "", "TOPIC_ALREADY_EXISTS: Topic with this name already exists."},
		{"broker message added", kerr.InvalidConfig, "unknown property x", "INVALID_CONFIG: Configuration is invalid. (broker: unknown property x)"},
		{"repeated name dropped", kerr.TopicAlreadyExists, `TOPIC_ALREADY_EXISTS: topic "a" already exists`, `TOPIC_ALREADY_EXISTS: Topic with this name already exists. (broker: topic "a" already exists)`},
		{"message equal to explanation", kerr.TopicAlreadyExists, "Topic with this name already exists.", "TOPIC_ALREADY_EXISTS: Topic with this name already exists."},
		{"message equal to name", kerr.TopicAlreadyExists, "TOPIC_ALREADY_EXISTS", "TOPIC_ALREADY_EXISTS: Topic with this name already exists."},
		{"wrapped kafka error", fmt.Errorf("produce: %w", kerr.NotEnoughReplicas), "", "NOT_ENOUGH_REPLICAS: Messages are rejected since there are fewer in-sync replicas than required."},
		{"not a kafka error", errors.New("dial tcp: connection refused"), "", "dial tcp: connection refused"},
		{"not a kafka error with message", errors.New("odd"), "details", "odd (broker: details)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kafkaErrorLine(tt.err, tt.message); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExplainError(t *testing.T) {
	kadmErr := &kadm.ErrAndMessage{Err: kerr.PolicyViolation, ErrMessage: "no"}
	if got, want := explainError(kadmErr).Error(), "POLICY_VIOLATION: Request parameters do not satisfy the configured policy. (broker: no)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, unchanged := range []error{errors.New("plain"), fmt.Errorf("context kept: %w", kadmErr)} {
		if got := explainError(unchanged); got != unchanged {
			t.Errorf("explainError(%v) = %v, want it unchanged", unchanged, got)
		}
	}
	if withBrokerMessage(nil, "x") != nil {
		t.Error("withBrokerMessage(nil) is not nil")
	}
	if !errors.Is(withBrokerMessage(kerr.InvalidTopicException, "bad name"), kerr.InvalidTopicException) {
		t.Error("withBrokerMessage hides the Kafka error from errors.Is")
	}
	if got := errorName(fmt.Errorf("x: %w", kerr.LeaderNotAvailable)); got != "LEADER_NOT_AVAILABLE" {
		t.Errorf("errorName = %q", got)
	}
}

// TestExplainShardErrors: a request sent to several brokers that some of
// them failed is told broker by broker, not as kadm's "request X has N
// separate shard errors".
func TestExplainShardErrors(t *testing.T) {
	se := &kadm.ShardErrors{Name: "ListGroups", AllFailed: false, Errs: []kadm.ShardError{
		{Broker: kadm.BrokerDetail{NodeID: 2, Host: "127.0.0.1", Port: 9192}, Err: kerr.CoordinatorLoadInProgress},
		{Broker: kadm.BrokerDetail{NodeID: -1}, Err: errors.New("dial tcp 127.0.0.1:9292: connect: connection refused")},
	}}
	got := explainError(se)
	want := "2 of the brokers asked failed: broker 2 at 127.0.0.1:9192 answered COORDINATOR_LOAD_IN_PROGRESS: " + kerr.CoordinatorLoadInProgress.Description +
		"; a broker answered dial tcp 127.0.0.1:9292: connect: connection refused"
	if got.Error() != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if strings.Contains(got.Error(), "shard") || !errors.Is(got, kerr.CoordinatorLoadInProgress) {
		t.Errorf("%q: library wording, or the Kafka error lost", got)
	}
	se.AllFailed = true
	if got := explainError(se).Error(); !strings.HasPrefix(got, "every broker asked failed: ") {
		t.Errorf("all failed: %q", got)
	}
}
