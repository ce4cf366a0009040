package controller

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestValidateTopicName(t *testing.T) {
	tests := []struct {
		name  string
		valid bool
	}{
		{"orders", true},
		{"Orders.v2_final-3", true},
		{"__consumer_offsets", true},
		{strings.Repeat("a", 249), true},
		{strings.Repeat("a", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"has space", false},
		{"slash/name", false},
		{"tab\t", false},
		{"ünïcode", false},
		{"colon:", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateTopicName(tc.name)
			if tc.valid {
				wantCode(t, err, nil)
			} else {
				wantCode(t, err, kerr.InvalidTopicException)
			}
		})
	}
}
