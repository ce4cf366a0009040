package group

import (
	"fmt"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// PartitionFor is the __consumer_offsets partition of a group, computed as
// Kafka does (Java's String.hashCode, made non-negative, modulo the
// partition count), so clients and tools that compute it agree with us.
func PartitionFor(groupID string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	var h int32
	for _, u := range utf16.Encode([]rune(groupID)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 { // Kafka's Utils.abs maps MIN_VALUE to 0
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

// subscriptionTopics decodes the topics of a consumer's subscription (the
// member metadata of protocol type "consumer").
func subscriptionTopics(metadata []byte) ([]string, error) {
	var s kmsg.ConsumerMemberMetadata
	if err := s.ReadFrom(metadata); err != nil {
		return nil, fmt.Errorf("consumer subscription: %w", err)
	}
	return s.Topics, nil
}
