package main

import (
	"errors"
	"fmt"
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
