package controller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestErrorCode(t *testing.T) {
	cause := errors.New("retention.ms must be a number")
	tests := []struct {
		name string
		err  error
		want int16
	}{
		{"nil", nil, 0},
		{"controller error", errorf(kerr.TopicAlreadyExists, "x"), 36},
		{"wrapped controller error", fmt.Errorf("create: %w", errorf(kerr.InvalidPartitions, "x")), 37},
		{"with cause", &Error{Code: kerr.InvalidConfig, Detail: "d", Cause: cause}, 40},
		{"bare kerr", kerr.FencedLeaderEpoch, 74},
		{"other", errors.New("disk on fire"), -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ErrorCode(tc.err); got != tc.want {
				t.Fatalf("ErrorCode = %d, want %d", got, tc.want)
			}
		})
	}
	withCause := &Error{Code: kerr.InvalidConfig, Detail: "d", Cause: cause}
	if !errors.Is(withCause, cause) || !errors.Is(withCause, kerr.InvalidConfig) {
		t.Fatal("Error does not unwrap to both code and cause")
	}
}
